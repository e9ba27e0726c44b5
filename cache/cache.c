/*
 * cache/cache.c - the compiled-kernel cache: keys, checksummed entries, the in-process map,
 * the LMDB store (growth, LRU eviction, stale readers), and the operations behind
 * `fusec cache` and `fusec explain`. See cache.h for the contract and the formats.
 */
#define _GNU_SOURCE
#include "cache.h"

#include "cache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack: no hidden malloc */
#include <xxhash.h>

/* ---- little-endian encoding -------------------------------------------------------------- */

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t align16(uint64_t n) { return (n + 15u) & ~(uint64_t)15u; }

/* ---- the stored value -------------------------------------------------------------------- */

#define ENTRY_MAGIC 0x45434346u /* "FCCE" */
/* Payload offsets (relative to the payload, which follows the 32-byte header). */
enum {
    P_KEY = 0,
    P_CREATED = 16,
    P_FIELD_HASH = 24, /* FCC_FIELD_COUNT x u64 */
    P_KEY_FORMAT = 80,
    P_CODEGEN = 84,
    P_NVRTC = 88,
    P_SOURCE_LEN = 96,
    P_NAME_LEN = 104,
    P_ARCH_LEN = 108,
    P_OPTIONS_LEN = 112,
    P_SUMMARY_LEN = 116, /* format 2; zero in format 1 */
    P_META_LEN = 120,
    P_CUBIN_LEN = 128,
    P_STRINGS = 136
};
/* Bounds that keep every length sum far from overflow and reject nonsense early. */
#define MAX_ARCH_LEN 64u
#define MAX_NAME_LEN 1024u
#define MAX_OPTIONS_LEN (1u << 20)
#define MAX_SUMMARY_LEN 4096u
/* The oldest entry format still read: format 1 is format 2 without the summary string, so its
 * kernels stay usable (their key is unchanged) and list with an empty summary. */
#define MIN_ENTRY_FORMAT_VERSION 1u
#define MAX_BLOB_SIZE (1ull << 40)

/* A value's payload, decoded; pointers into the value. */
typedef struct parsed_entry {
    uint64_t created_us;
    uint64_t field_hash[FCC_FIELD_COUNT];
    uint32_t key_format, codegen_version, nvrtc_version;
    uint64_t source_len;
    const char *name, *arch, *options, *summary;
    const uint8_t *meta, *cubin;
    uint64_t meta_size, cubin_size;
} parsed_entry;

/* Where each part of a payload lies, from the lengths. Shared by writer and reader so the two
 * cannot disagree. Returns the payload size. */
typedef struct layout {
    uint64_t name, arch, options, summary, meta, cubin, end;
} layout;

/* version: the entry format (1 has no summary string, not even its NUL). */
static layout compute_layout(unsigned version, uint64_t name_len, uint64_t arch_len,
                             uint64_t options_len, uint64_t summary_len, uint64_t meta_size,
                             uint64_t cubin_size) {
    layout l;
    l.name = P_STRINGS;
    l.arch = l.name + name_len + 1;
    l.options = l.arch + arch_len + 1;
    l.summary = l.options + options_len + 1;
    l.meta = align16(version >= 2 ? l.summary + summary_len + 1 : l.summary);
    l.cubin = align16(l.meta + meta_size);
    l.end = l.cubin + cubin_size;
    return l;
}

/* Kernel names are C identifiers and archs like "sm_90a": anything else in a stored value came
 * from a damaged or forged file, and must not reach a terminal or NVRTC's loader. Options are
 * printable ASCII. */
static bool name_ok(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
              (i > 0 && ch >= '0' && ch <= '9')))
            return false;
    }
    return n > 0;
}
static bool arch_ok(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return n > 0;
}
static bool printable_ok(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e) return false;
    return true;
}

static uint64_t hash_u32(uint32_t v) {
    uint8_t b[4];
    put_u32(b, v);
    return XXH3_64bits(b, 4);
}

/* Whether the stored per-field hashes are those of the stored fields: a value whose metadata
 * was edited (another arch, another NVRTC) no longer matches the key it claims. The source is
 * not stored, so its hash is the one field taken on trust (the entry's checksum, or a signed
 * export, covers it). */
static bool fields_match(const uint8_t *p, const char *name, const char *arch,
                         const char *options) {
    uint64_t want[FCC_FIELD_COUNT] = {
        hash_u32(get_u32(p + P_KEY_FORMAT)), hash_u32(get_u32(p + P_CODEGEN)), 0,
        XXH3_64bits(options, strlen(options)), XXH3_64bits(arch, strlen(arch)),
        hash_u32(get_u32(p + P_NVRTC)), XXH3_64bits(name, strlen(name))};
    for (int i = 0; i < FCC_FIELD_COUNT; i++)
        if (i != FCC_FIELD_SOURCE && get_u64(p + P_FIELD_HASH + 8 * i) != want[i]) return false;
    return get_u32(p + P_KEY_FORMAT) == FCC_KEY_FORMAT_VERSION;
}

/* Checks and decodes a stored value. check_sum false skips the checksum, for values this
 * process built or has just checked. */
static fcc_problem parse_value_ex(const uint8_t *v, size_t len, const uint8_t *want_key,
                                  bool check_sum, parsed_entry *out) {
    if (len < 8) return FCC_PROBLEM_TRUNCATED;
    if (get_u32(v) != ENTRY_MAGIC) return FCC_PROBLEM_MAGIC;
    if (len < FCC_ENTRY_HEADER_SIZE) return FCC_PROBLEM_TRUNCATED;
    unsigned version = get_u32(v + 4) & 0xffffu;
    if (version < MIN_ENTRY_FORMAT_VERSION || version > FCC_ENTRY_FORMAT_VERSION ||
        (get_u32(v + 4) >> 16) != FCC_ENTRY_HEADER_SIZE)
        return FCC_PROBLEM_VERSION;
    uint64_t payload_size = get_u64(v + 16);
    if (payload_size != len - FCC_ENTRY_HEADER_SIZE) return FCC_PROBLEM_TRUNCATED;
    const uint8_t *p = v + FCC_ENTRY_HEADER_SIZE;
    if (check_sum && XXH3_64bits(p, (size_t)payload_size) != get_u64(v + 24))
        return FCC_PROBLEM_CHECKSUM;
    if (payload_size < P_STRINGS) return FCC_PROBLEM_LAYOUT;
    uint64_t name_len = get_u32(p + P_NAME_LEN), arch_len = get_u32(p + P_ARCH_LEN);
    uint64_t options_len = get_u32(p + P_OPTIONS_LEN);
    uint64_t summary_len = get_u32(p + P_SUMMARY_LEN);
    uint64_t meta_size = get_u64(p + P_META_LEN), cubin_size = get_u64(p + P_CUBIN_LEN);
    if (name_len > MAX_NAME_LEN || arch_len > MAX_ARCH_LEN || options_len > MAX_OPTIONS_LEN ||
        summary_len > MAX_SUMMARY_LEN || (version < 2 && summary_len) ||
        meta_size > MAX_BLOB_SIZE || cubin_size > MAX_BLOB_SIZE)
        return FCC_PROBLEM_LAYOUT;
    layout l = compute_layout(version, name_len, arch_len, options_len, summary_len, meta_size,
                              cubin_size);
    if (l.end != payload_size || p[l.arch - 1] || p[l.options - 1] ||
        p[l.options + options_len] || (version >= 2 && p[l.summary + summary_len]) ||
        name_len == 0 || arch_len == 0 || strlen((const char *)p + l.name) != name_len ||
        strlen((const char *)p + l.arch) != arch_len ||
        strlen((const char *)p + l.options) != options_len ||
        (version >= 2 && strlen((const char *)p + l.summary) != summary_len))
        return FCC_PROBLEM_LAYOUT;
    const char *name = (const char *)p + l.name, *arch = (const char *)p + l.arch;
    const char *options = (const char *)p + l.options;
    if (!name_ok(name, name_len) || !arch_ok(arch, arch_len) ||
        !printable_ok(options, options_len))
        return FCC_PROBLEM_NAME;
    if (want_key && memcmp(p + P_KEY, want_key, 16) != 0) return FCC_PROBLEM_KEY;
    if (check_sum && !fields_match(p, name, arch, options)) return FCC_PROBLEM_FIELDS;
    if (out) {
        out->created_us = get_u64(p + P_CREATED);
        for (int i = 0; i < FCC_FIELD_COUNT; i++)
            out->field_hash[i] = get_u64(p + P_FIELD_HASH + 8 * i);
        out->key_format = get_u32(p + P_KEY_FORMAT);
        out->codegen_version = get_u32(p + P_CODEGEN);
        out->nvrtc_version = get_u32(p + P_NVRTC);
        out->source_len = get_u64(p + P_SOURCE_LEN);
        out->name = (const char *)p + l.name;
        out->arch = (const char *)p + l.arch;
        out->options = (const char *)p + l.options;
        out->summary = version >= 2 ? (const char *)p + l.summary : "";
        out->meta = p + l.meta;
        out->meta_size = meta_size;
        out->cubin = p + l.cubin;
        out->cubin_size = cubin_size;
    }
    return FCC_PROBLEM_NONE;
}

static void info_from(fcc_entry_info *info, const uint8_t *key, size_t value_size,
                      uint64_t stamp, fcc_problem problem, const parsed_entry *p);

static fcc_problem parse_value(const uint8_t *v, size_t len, const uint8_t *want_key,
                               parsed_entry *out) {
    return parse_value_ex(v, len, want_key, true, out);
}

fcc_problem fcc_decode_value(const void *value, size_t len, const fcc_key *want_key,
                             fcc_entry_info *out) {
    parsed_entry p;
    fcc_problem problem = parse_value(value, len, want_key ? want_key->bytes : NULL, &p);
    if (out) {
        /* A value too short to hold its key reports the key wanted (or zeros). */
        uint8_t key[16] = {0};
        if (len >= FCC_ENTRY_HEADER_SIZE + 16)
            memcpy(key, (const uint8_t *)value + FCC_ENTRY_HEADER_SIZE + P_KEY, 16);
        else if (want_key)
            memcpy(key, want_key->bytes, 16);
        info_from(out, key, len, 0, problem, &p);
    }
    return problem;
}

/* ---- keys -------------------------------------------------------------------------------- */

static fc_status check_fields(const fcc_key_fields *f) {
    if (!f || !f->options || !f->arch || !f->kernel_name || (!f->source && f->source_len))
        return FC_ERR_NULL;
    size_t arch_len = strlen(f->arch), name_len = strlen(f->kernel_name);
    if (!arch_len || !name_len || arch_len > MAX_ARCH_LEN || name_len > MAX_NAME_LEN ||
        strlen(f->options) > MAX_OPTIONS_LEN || !name_ok(f->kernel_name, name_len) ||
        !arch_ok(f->arch, arch_len) || !printable_ok(f->options, strlen(f->options)))
        return FC_ERR_INVALID; /* what a stored value may hold (parse_value) */
    return FC_OK;
}

static void hash_part(XXH3_state_t *st, const void *p, uint64_t n) {
    uint8_t len[8];
    put_u64(len, n);
    XXH3_128bits_update(st, len, sizeof len);
    if (n) XXH3_128bits_update(st, p, (size_t)n);
}

/* Both the key and the per-field hashes; fields already checked. */
static void key_and_field_hashes(const fcc_key_fields *f, fcc_key *key,
                                 uint64_t hashes[FCC_FIELD_COUNT]) {
    uint8_t kf[4], cg[4], nv[4];
    put_u32(kf, FCC_KEY_FORMAT_VERSION);
    put_u32(cg, f->codegen_version);
    put_u32(nv, f->nvrtc_version);
    const void *part[FCC_FIELD_COUNT] = {kf, cg, f->source, f->options, f->arch, nv,
                                         f->kernel_name};
    uint64_t size[FCC_FIELD_COUNT] = {4, 4, f->source_len, strlen(f->options),
                                      strlen(f->arch), 4, strlen(f->kernel_name)};
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    static const char tag[] = "fusec kernel key";
    XXH3_128bits_update(&st, tag, sizeof tag - 1);
    for (int i = 0; i < FCC_FIELD_COUNT; i++) {
        hash_part(&st, part[i], size[i]);
        if (hashes) hashes[i] = XXH3_64bits(size[i] ? part[i] : "", (size_t)size[i]);
    }
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(&st));
    memcpy(key->bytes, canon.digest, 16);
}

fc_status fcc_key_compute(const fcc_key_fields *fields, fcc_key *out) {
    if (!out) return FC_ERR_NULL;
    fc_status st = check_fields(fields);
    if (st) return st;
    key_and_field_hashes(fields, out, NULL);
    return FC_OK;
}

void fcc_key_to_hex(const fcc_key *key, char out[33]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = digits[key->bytes[i] >> 4];
        out[2 * i + 1] = digits[key->bytes[i] & 15];
    }
    out[32] = 0;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

fc_status fcc_key_from_hex(const char *hex, fcc_key *out) {
    if (!hex || !out) return FC_ERR_NULL;
    for (int i = 0; i < 16; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hi < 0 ? -1 : hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return FC_ERR_INVALID;
        out->bytes[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[32] ? FC_ERR_INVALID : FC_OK;
}

const char *fcc_field_name(int field) {
    static const char *const names[FCC_FIELD_COUNT] = {
        "key-format", "codegen", "source", "options", "arch", "nvrtc", "kernel"};
    return field >= 0 && field < FCC_FIELD_COUNT ? names[field] : "?";
}

const char *fcc_problem_name(fcc_problem problem) {
    switch (problem) {
    case FCC_PROBLEM_NONE: return "ok";
    case FCC_PROBLEM_TRUNCATED: return "truncated";
    case FCC_PROBLEM_MAGIC: return "bad magic";
    case FCC_PROBLEM_VERSION: return "unknown entry format";
    case FCC_PROBLEM_CHECKSUM: return "checksum mismatch";
    case FCC_PROBLEM_LAYOUT: return "malformed payload";
    case FCC_PROBLEM_KEY: return "stored under the wrong key";
    case FCC_PROBLEM_NAME: return "bad kernel name, arch or options";
    case FCC_PROBLEM_FIELDS: return "metadata does not match its key";
    }
    return "?";
}

/* Builds a complete value (header and payload) in one malloc'd buffer. */
static fc_status build_value(const fcc_key *key, const fcc_key_fields *f, const char *summary,
                             const void *cubin, size_t cubin_size, const void *meta,
                             size_t meta_size, uint8_t **out, size_t *out_len) {
    uint64_t hashes[FCC_FIELD_COUNT];
    fcc_key computed;
    key_and_field_hashes(f, &computed, hashes);
    size_t name_len = strlen(f->kernel_name), arch_len = strlen(f->arch);
    size_t options_len = strlen(f->options), summary_len = strlen(summary);
    layout l = compute_layout(FCC_ENTRY_FORMAT_VERSION, name_len, arch_len, options_len,
                              summary_len, meta_size, cubin_size);
    uint64_t total = FCC_ENTRY_HEADER_SIZE + l.end;
    if (total > SIZE_MAX) return FC_ERR_NOMEM;
    uint8_t *v = calloc(1, (size_t)total); /* zeroed: padding and terminators */
    if (!v) return FC_ERR_NOMEM;
    uint8_t *p = v + FCC_ENTRY_HEADER_SIZE;
    memcpy(p + P_KEY, key->bytes, 16);
    put_u64(p + P_CREATED, now_us());
    for (int i = 0; i < FCC_FIELD_COUNT; i++) put_u64(p + P_FIELD_HASH + 8 * i, hashes[i]);
    put_u32(p + P_KEY_FORMAT, FCC_KEY_FORMAT_VERSION);
    put_u32(p + P_CODEGEN, f->codegen_version);
    put_u32(p + P_NVRTC, f->nvrtc_version);
    put_u64(p + P_SOURCE_LEN, f->source_len);
    put_u32(p + P_NAME_LEN, (uint32_t)name_len);
    put_u32(p + P_ARCH_LEN, (uint32_t)arch_len);
    put_u32(p + P_OPTIONS_LEN, (uint32_t)options_len);
    put_u32(p + P_SUMMARY_LEN, (uint32_t)summary_len);
    put_u64(p + P_META_LEN, meta_size);
    put_u64(p + P_CUBIN_LEN, cubin_size);
    memcpy(p + l.name, f->kernel_name, name_len);
    memcpy(p + l.arch, f->arch, arch_len);
    memcpy(p + l.options, f->options, options_len);
    memcpy(p + l.summary, summary, summary_len);
    if (meta_size) memcpy(p + l.meta, meta, meta_size);
    if (cubin_size) memcpy(p + l.cubin, cubin, cubin_size);
    put_u32(v, ENTRY_MAGIC);
    put_u32(v + 4, FCC_ENTRY_FORMAT_VERSION | FCC_ENTRY_HEADER_SIZE << 16);
    put_u64(v + 16, l.end);
    put_u64(v + 24, XXH3_64bits(p, (size_t)l.end));
    *out = v;
    *out_len = (size_t)total;
    return FC_OK;
}

/* ---- the store --------------------------------------------------------------------------- */

typedef struct mem_entry {
    fcc_key key;
    uint8_t *value; /* the whole stored value, owned; parsed points into it */
    size_t value_size;
    parsed_entry parsed;
    uint64_t disk_stamp; /* last-used time on disk as last known (0: unknown) */
    bool touch_pending;  /* a use to write with the next transaction */
    struct mem_entry *next_retired;
} mem_entry;

struct fcc_cache {
    fcc_cache *next; /* the process's registry */
    int refs;
    pid_t pid;
    char *dir;
    pthread_mutex_t mu;

    MDB_env *env;
    MDB_dbi dbi_entries, dbi_lru;
    bool have_dbis; /* false: a read-only environment without our databases (empty) */
    bool persistent, read_only, require_cached;
    bool absent; /* no store on disk, and this open was not to create one: an empty cache */
    uint64_t cap, slack, touch_interval_us;
    int empty_evictions; /* evictions in a row that found nothing to evict */

    mem_entry **slots; /* open addressing, power-of-two capacity */
    size_t nslots, count, pending;
    mem_entry *retired; /* replaced or cleared entries: handed-out pointers stay valid */

    fcc_stats stats;
    bool warning_taken;
    char warning[4096];
    char errmsg[1024];

    /* How it was opened: a damaged store moved aside is replaced by a fresh one, opened so. */
    uint64_t initial;
    bool want_read_only, no_create;
    struct stat data_id; /* data.mdb as checked before mapping (st_ino 0: none) */
    char damage[3072];   /* what damage was found and what became of the files ("" none) */
    unsigned noticed;    /* NOTICE_* bits: each notice is printed once per store */
    int last_rc;         /* the LMDB code of run_write's last failure */
};

/* Notices printed on stderr once per store: problems found while in use, which no open-time
 * warning could carry, and which a user must hear of even when fusec runs inside their
 * program (their kernels are recompiled, or not kept). */
enum { NOTICE_DAMAGE = 1, NOTICE_THRASH = 2, NOTICE_DISK_FULL = 4 };

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static fcc_cache *registry;

static void set_err(fcc_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(fcc_cache *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
}

static void add_warning(fcc_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_warning(fcc_cache *c, const char *fmt, ...) {
    size_t used = strlen(c->warning);
    if (used && used + 3 < sizeof c->warning) {
        strcpy(c->warning + used, "; ");
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->warning + used, sizeof c->warning - used, fmt, ap);
    va_end(ap);
}

static void notice(fcc_cache *c, unsigned which, const char *text) {
    if (c->noticed & which) return;
    c->noticed |= which;
    fprintf(stderr, "fusec: warning: %s\n", text);
}

/* ---- the in-process map ------------------------------------------------------------------ */

static size_t slot_of(const fcc_cache *c, const fcc_key *key) {
    uint64_t h = get_u64(key->bytes); /* keys are hash output: any 8 bytes are uniform */
    size_t i = (size_t)h & (c->nslots - 1);
    while (c->slots[i] && memcmp(c->slots[i]->key.bytes, key->bytes, 16) != 0)
        i = (i + 1) & (c->nslots - 1);
    return i;
}

static mem_entry *map_find(const fcc_cache *c, const fcc_key *key) {
    return c->nslots ? c->slots[slot_of(c, key)] : NULL;
}

static void retire(fcc_cache *c, mem_entry *e) {
    if (e->touch_pending) c->pending--;
    e->touch_pending = false;
    e->next_retired = c->retired;
    c->retired = e;
}

/* Inserts e, replacing (retiring) an entry with the same key. */
static fc_status map_insert(fcc_cache *c, mem_entry *e) {
    if (2 * (c->count + 1) > c->nslots) {
        size_t n = c->nslots ? 2 * c->nslots : 64;
        mem_entry **slots = calloc(n, sizeof *slots);
        if (!slots) return FC_ERR_NOMEM;
        mem_entry **old = c->slots;
        size_t old_n = c->nslots;
        c->slots = slots;
        c->nslots = n;
        for (size_t i = 0; i < old_n; i++)
            if (old[i]) c->slots[slot_of(c, &old[i]->key)] = old[i];
        free(old);
    }
    size_t i = slot_of(c, &e->key);
    if (c->slots[i])
        retire(c, c->slots[i]);
    else
        c->count++;
    c->slots[i] = e;
    return FC_OK;
}

/* Takes ownership of value (already checked) on success. */
static fc_status map_add_value(fcc_cache *c, const fcc_key *key, uint8_t *value, size_t len,
                               uint64_t disk_stamp, mem_entry **out) {
    mem_entry *e = calloc(1, sizeof *e);
    if (!e) return FC_ERR_NOMEM;
    e->key = *key;
    e->value = value;
    e->value_size = len;
    e->disk_stamp = disk_stamp;
    if (parse_value_ex(value, len, key->bytes, false, &e->parsed) != FCC_PROBLEM_NONE ||
        map_insert(c, e) != FC_OK) {
        free(e);
        return FC_ERR_NOMEM; /* parse cannot fail here: the value was checked or built */
    }
    if (out) *out = e;
    return FC_OK;
}

static void free_entry(mem_entry *e) {
    free(e->value);
    free(e);
}

static void map_clear(fcc_cache *c) {
    for (size_t i = 0; i < c->nslots; i++)
        if (c->slots[i]) {
            retire(c, c->slots[i]);
            c->slots[i] = NULL;
        }
    c->count = 0;
}

/* A use: note it for the next write when the stamp on disk is old enough. */
static void note_use(fcc_cache *c, mem_entry *e, uint64_t now) {
    if (!c->persistent || c->read_only || e->touch_pending) return;
    if (now >= e->disk_stamp && now - e->disk_stamp >= c->touch_interval_us) {
        e->touch_pending = true;
        c->pending++;
    }
}

/* ---- LMDB plumbing ----------------------------------------------------------------------- */

static uint64_t page_round(uint64_t n) {
    long ps = sysconf(_SC_PAGESIZE);
    uint64_t p = ps > 0 ? (uint64_t)ps : 4096u;
    return (n + p - 1) / p * p;
}

static uint64_t map_size_now(fcc_cache *c) {
    MDB_envinfo info;
    mdb_env_info(c->env, &info);
    return info.me_mapsize;
}

/* Begins a transaction, adopting another process's larger map (MDB_MAP_RESIZED) and clearing
 * stale reader slots when the table is full. No other transaction of this process is open:
 * the store's mutex is held, so resizing the map here is allowed. */
static int txn_begin(fcc_cache *c, unsigned flags, MDB_txn **txn) {
    for (int tries = 0;; tries++) {
        int rc = mdb_txn_begin(c->env, NULL, flags, txn);
        if (tries < 4 && rc == MDB_MAP_RESIZED) {
            rc = mdb_env_set_mapsize(c->env, 0);
            if (rc) return rc;
            continue;
        }
        if (tries < 4 && rc == MDB_READERS_FULL) {
            int dead = 0;
            mdb_reader_check(c->env, &dead);
            if (dead) continue;
        }
        return rc;
    }
}

/* LMDB's own words for a file it cannot use: damage, to be moved aside like damage found by
 * the checks before mapping. */
static bool lmdb_damage(int rc) {
    return rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID ||
           rc == MDB_VERSION_MISMATCH || rc == MDB_INCOMPATIBLE;
}

typedef int (*txn_body)(fcc_cache *c, MDB_txn *txn, void *arg);
static fc_status make_room(fcc_cache *c, uint64_t need, bool may_evict);
static bool recover(fcc_cache *c, int rc, const char *what);

/* A write that failed for want of space (rc: ENOSPC, EDQUOT, or the EIO LMDB makes of a short
 * write on a full disk): a message that says so, once on stderr too, since the program goes
 * on without storing its kernels. */
static bool disk_full(fcc_cache *c, int rc, const char *what) {
    struct statvfs vfs;
    uint64_t avail = statvfs(c->dir, &vfs) == 0 ? (uint64_t)vfs.f_bavail * vfs.f_frsize
                                                : UINT64_MAX;
    if (rc == EFBIG) {
        set_err(c, "%s: the cache file %s/data.mdb reached the file size limit (ulimit -f): "
                   "the kernel is not stored, it is kept in this process only; raise the limit "
                   "or lower FUSEC_CACHE_MAX", what, c->dir);
    } else if (rc == ENOSPC || rc == EDQUOT || (rc == EIO && avail < (1u << 20))) {
        set_err(c, "%s: the cache's disk is full (%s: %" PRIu64 " KiB free%s): the kernel is "
                   "not stored, it is kept in this process only; free some space, or set "
                   "FUSEC_CACHE_DIR to a directory on another disk", what, c->dir,
                avail == UINT64_MAX ? 0 : avail >> 10, rc == EDQUOT ? ", quota reached" : "");
    } else {
        return false;
    }
    notice(c, NOTICE_DISK_FULL, c->errmsg);
    return true;
}

/* Runs body in a write transaction and commits; on MDB_MAP_FULL (from body or commit) makes
 * room (grow, else evict when may_evict, else the eviction slack) and runs it again. body
 * returns 0 or an LMDB / errno code and must be safe to run again from scratch. */
static fc_status run_write(fcc_cache *c, txn_body body, void *arg, uint64_t need,
                           bool may_evict, const char *what) {
    for (int attempt = 0; attempt < 48; attempt++) {
        MDB_txn *txn;
        int rc = txn_begin(c, 0, &txn);
        if (rc == 0) {
            rc = body(c, txn, arg);
            if (rc == 0)
                rc = mdb_txn_commit(txn);
            else
                mdb_txn_abort(txn);
        }
        if (rc == 0) return FC_OK;
        c->last_rc = rc;
        if (rc == ENOMEM) {
            set_err(c, "%s: out of memory", what);
            return FC_ERR_NOMEM;
        }
        if (lmdb_damage(rc) && c->persistent) {
            if (recover(c, rc, what)) continue; /* once more, on the fresh store */
            set_err(c, "%s", c->damage);
            return FC_ERR_IO;
        }
        if (disk_full(c, rc, what)) return FC_ERR_IO;
        if (rc != MDB_MAP_FULL) {
            set_err(c, "%s: %s", what, mdb_strerror(rc));
            return FC_ERR_IO;
        }
        fc_status st = make_room(c, need, may_evict);
        if (st) return st;
    }
    set_err(c, "%s: the cache stays full", what);
    return FC_ERR_IO;
}

typedef struct victim {
    uint8_t key[16];
    uint64_t stamp, size;
} victim;

static int victim_order(const void *a, const void *b) {
    const victim *x = a, *y = b;
    if (x->stamp != y->stamp) return x->stamp < y->stamp ? -1 : 1;
    return memcmp(x->key, y->key, 16);
}

static uint64_t read_stamp(fcc_cache *c, MDB_txn *txn, const void *key) {
    MDB_val k = {16, (void *)key}, v;
    if (mdb_get(txn, c->dbi_lru, &k, &v) != 0 || v.mv_size != 8) return 0;
    return get_u64(v.mv_data);
}

typedef struct evict_arg {
    uint64_t target, evicted, own;
} evict_arg;

/* Deletes the least recently used entries until about target bytes are free. */
static int evict_body(fcc_cache *c, MDB_txn *txn, void *arg) {
    evict_arg *a = arg;
    a->evicted = 0;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, c->dbi_entries, &cur);
    if (rc) return rc;
    size_t n = 0, cap = 0;
    victim *vs = NULL;
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 16) continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 256;
            victim *nv = realloc(vs, nc * sizeof *nv);
            if (!nv) {
                rc = ENOMEM;
                break;
            }
            vs = nv;
            cap = nc;
        }
        memcpy(vs[n].key, k.mv_data, 16);
        vs[n].size = v.mv_size;
        n++;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND) {
        free(vs);
        return rc;
    }
    for (size_t i = 0; i < n; i++) vs[i].stamp = read_stamp(c, txn, vs[i].key);
    if (n) qsort(vs, n, sizeof *vs, victim_order);
    uint64_t freed = 0;
    rc = 0;
    a->own = 0;
    for (size_t i = 0; i < n && freed < a->target; i++) {
        MDB_val key = {16, vs[i].key};
        rc = mdb_del(txn, c->dbi_entries, &key, NULL);
        if (rc) break;
        fcc_key vk;
        memcpy(vk.bytes, vs[i].key, 16);
        if (map_find(c, &vk)) a->own++; /* this process has used it: the cap is too small */
        rc = mdb_del(txn, c->dbi_lru, &key, NULL);
        if (rc && rc != MDB_NOTFOUND) break;
        rc = 0;
        freed += vs[i].size + 64; /* rough per-entry page overhead */
        a->evicted++;
    }
    free(vs);
    return rc;
}

/* A tiny write, so that the pages an eviction freed become reusable: LMDB reuses pages freed
 * by transaction T only from T+2 on (the previous snapshot stays readable). */
static int bump_body(fcc_cache *c, MDB_txn *txn, void *arg) {
    (void)arg;
    uint8_t now[8];
    put_u64(now, now_us());
    MDB_val k = {3, (void *)"gen"}, v = {8, now};
    return mdb_put(txn, c->dbi_lru, &k, &v, 0);
}

static fc_status evict(fcc_cache *c, uint64_t need) {
    int dead = 0;
    mdb_reader_check(c->env, &dead); /* a killed reader would pin the pages we free */
    uint64_t map = map_size_now(c);
    evict_arg a = {.target = need * 2 > map / 8 ? need * 2 : map / 8, .evicted = 0};
    fc_status st = run_write(c, evict_body, &a, 0, false, "evicting old kernels");
    if (st) return st;
    /* Nothing left to evict: other processes may have emptied the store, their freed pages not
     * reusable yet (see bump_body). A few more rounds, then give up. */
    if (!a.evicted && ++c->empty_evictions > 4) {
        set_err(c, "the kernel cache is empty and %" PRIu64 " bytes still do not fit in %" PRIu64,
                need, map);
        return FC_ERR_IO;
    }
    c->stats.evictions += a.evicted;
    c->stats.evicted_own += a.own;
    if (a.own) {
        /* Without this the cache thrashes silently: every run recompiles what the last
         * evicted. */
        char text[400];
        snprintf(text, sizeof text,
                 "the kernel cache cap (%" PRIu64 " KiB, FUSEC_CACHE_MAX) is smaller than the "
                 "kernels this program uses: kernels it has compiled or loaded are evicted and "
                 "will be compiled again; raise FUSEC_CACHE_MAX (for example to 2G)",
                 c->cap >> 10);
        notice(c, NOTICE_THRASH, text);
    }
    run_write(c, bump_body, NULL, 0, false, "evicting old kernels"); /* best effort */
    return FC_OK;
}

static fc_status set_map(fcc_cache *c, uint64_t size) {
    int rc = mdb_env_set_mapsize(c->env, (size_t)size);
    if (rc) {
        set_err(c, "resizing the kernel cache map: %s", mdb_strerror(rc));
        return FC_ERR_IO;
    }
    return FC_OK;
}

static fc_status make_room(fcc_cache *c, uint64_t need, bool may_evict) {
    uint64_t old = map_size_now(c);
    fc_status st = set_map(c, 0); /* adopt what another process may have grown it to */
    if (st) return st;
    uint64_t adopted = map_size_now(c);
    if (adopted > old) return FC_OK;
    if (old < c->cap) {
        uint64_t grown = old * 2 > old + 2 * need ? old * 2 : old + 2 * need;
        st = set_map(c, page_round(grown < c->cap ? grown : c->cap));
        if (!st) c->stats.grows++;
        return st;
    }
    if (adopted < old && (st = set_map(c, old))) return st;
    if (may_evict) return evict(c, need);
    if (old < c->cap + c->slack) { /* deleting needs a few free pages itself */
        st = set_map(c, c->cap + c->slack);
        if (!st) c->stats.grows++;
        return st;
    }
    set_err(c, "the kernel cache map is full at %" PRIu64 " bytes", old);
    return FC_ERR_IO;
}

/* ---- writes ------------------------------------------------------------------------------ */

typedef struct record {
    fcc_key key;
    const uint8_t *value;
    size_t len;
    uint64_t stamp;
} record;

typedef struct put_arg {
    const record *recs;
    size_t n;
    uint64_t now;
} put_arg;

static int write_pending_stamps(fcc_cache *c, MDB_txn *txn, uint64_t now) {
    if (!c->pending) return 0;
    uint8_t stamp[8];
    put_u64(stamp, now);
    for (size_t i = 0; i < c->nslots; i++) {
        mem_entry *e = c->slots[i];
        if (!e || !e->touch_pending) continue;
        MDB_val k = {16, e->key.bytes}, v;
        int rc = mdb_get(txn, c->dbi_entries, &k, &v);
        if (rc == MDB_NOTFOUND) continue; /* evicted or cleared elsewhere: no orphan stamp */
        if (rc) return rc;
        MDB_val sv = {8, stamp};
        if ((rc = mdb_put(txn, c->dbi_lru, &k, &sv, 0))) return rc;
    }
    return 0;
}

static int put_body(fcc_cache *c, MDB_txn *txn, void *arg) {
    put_arg *a = arg;
    int rc = write_pending_stamps(c, txn, a->now);
    for (size_t i = 0; !rc && i < a->n; i++) {
        const record *r = &a->recs[i];
        uint8_t stamp[8];
        put_u64(stamp, r->stamp);
        MDB_val k = {16, (void *)r->key.bytes}, v = {r->len, (void *)r->value}, sv = {8, stamp};
        rc = mdb_put(txn, c->dbi_entries, &k, &v, 0);
        if (!rc) rc = mdb_put(txn, c->dbi_lru, &k, &sv, 0);
    }
    return rc;
}

static void pending_written(fcc_cache *c, uint64_t now) {
    if (!c->pending) return;
    for (size_t i = 0; i < c->nslots; i++) {
        mem_entry *e = c->slots[i];
        if (e && e->touch_pending) {
            e->touch_pending = false;
            e->disk_stamp = now;
        }
    }
    c->pending = 0;
}

/* Writes records (and pending stamps) in one transaction, growing or evicting as needed. */
static fc_status disk_write(fcc_cache *c, const record *recs, size_t n) {
    uint64_t need = 0;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].len > c->cap / 2) {
            set_err(c, "a kernel of %zu bytes is larger than half the cache cap (%" PRIu64 ")",
                    recs[i].len, c->cap);
            return FC_ERR_IO;
        }
        need += recs[i].len + 64;
    }
    need += 8 * 4096; /* branch pages, stamps, the free list */
    put_arg a = {recs, n, now_us()};
    c->empty_evictions = 0;
    fc_status st = run_write(c, put_body, &a, need, true, "writing the kernel cache");
    if (!st) pending_written(c, a.now);
    return st;
}

/* ---- opening and closing ----------------------------------------------------------------- */

fcc_options fcc_options_default(void) {
    fcc_options o;
    memset(&o, 0, sizeof o);
    o.touch_interval_us = FCC_DEFAULT_TOUCH_INTERVAL_US;
    o.require_cached = -1;
    return o;
}

/* "123", "64K", "512M", "2G", "1T" (binary units, case-insensitive, optional trailing B). */
static bool parse_size(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-') return false;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I')) end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end || v == 0 || (shift && v > (UINT64_MAX >> shift))) return false;
    *out = (uint64_t)v << shift;
    return true;
}

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* mkdir -p; returns 0 or the errno of the first failure. */
static int make_dirs(const char *path) {
    char *p = strdup(path);
    if (!p) return ENOMEM;
    int err = 0;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == 0) {
            char saved = *s;
            *s = 0;
            if (mkdir(p, 0755) != 0 && errno != EEXIST) err = errno;
            *s = saved;
            if (err || !saved) break;
        }
    }
    free(p);
    return err;
}

static int open_dbis(fcc_cache *c, MDB_txn *txn, void *arg) {
    (void)arg;
    unsigned flags = c->read_only ? 0 : MDB_CREATE;
    int rc = mdb_dbi_open(txn, FCC_DB_ENTRIES, flags, &c->dbi_entries);
    if (!rc) rc = mdb_dbi_open(txn, FCC_DB_LRU, flags, &c->dbi_lru);
    return rc;
}

/* Renames DIR/name to DIR/name.damaged-STAMP (to: the new path, "" when nothing moved). With
 * id, only the very file that was checked: another process may have moved it aside and
 * started afresh already. Returns 0 or an errno. */
static int move_aside(fcc_cache *c, const char *name, const struct stat *id, const char *stamp,
                      char *to, size_t to_size) {
    to[0] = 0;
    char *from = str_printf("%s/%s", c->dir, name);
    if (!from) return ENOMEM;
    struct stat st;
    bool exists = lstat(from, &st) == 0; /* the name itself: a dangling link moves too */
    if (exists && id && id->st_ino &&
        (stat(from, &st) != 0 || st.st_ino != id->st_ino || st.st_dev != id->st_dev))
        exists = false; /* replaced already */
    int err = 0;
    if (exists) {
        snprintf(to, to_size, "%s.damaged-%s", from, stamp);
        if (rename(from, to) != 0) {
            err = errno;
            to[0] = 0;
        }
    }
    free(from);
    return err;
}

/* Damage in file (data.mdb or lock.mdb) of the store, why saying what ("is truncated (...)").
 * A writable store moves data.mdb and lock.mdb aside, kept for a bug report, and returns true:
 * open afresh. A read-only one leaves them and reads as empty; a lock file another process
 * holds cannot be moved (they would lose their locking): memory only. */
static bool handle_damage(fcc_cache *c, const char *file, const char *why, bool read_only,
                          bool in_use) {
    if (in_use) {
        snprintf(c->damage, sizeof c->damage,
                 "the kernel cache lock file %s/%s %s; kernels are kept in this process only: "
                 "stop the programs that use the cache, then run `fusec cache clear`",
                 c->dir, file, why);
        add_warning(c, "%s", c->damage);
        return false;
    }
    if (read_only) {
        snprintf(c->damage, sizeof c->damage,
                 "the kernel cache file %s/%s %s; it is left as it is (this command only reads "
                 "the cache) and the cache reads as empty: `fusec cache clear` moves it aside "
                 "and starts an empty cache", c->dir, file, why);
        add_warning(c, "%s", c->damage);
        c->absent = true;
        return false;
    }
    char stamp[64], data_to[1024], lock_to[1024];
    time_t now = time(NULL);
    struct tm tm;
    size_t n = gmtime_r(&now, &tm) ? strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm) : 0;
    snprintf(stamp + n, sizeof stamp - n, "%s%ld", n ? "-" : "", (long)getpid());
    bool data = strcmp(file, "data.mdb") == 0;
    /* The lock file goes with a damaged data file: it names that file's transactions. */
    int err = data ? move_aside(c, "data.mdb", &c->data_id, stamp, data_to, sizeof data_to) : 0;
    if (!err) err = move_aside(c, "lock.mdb", NULL, stamp, lock_to, sizeof lock_to);
    const char *to = data ? data_to : lock_to;
    if (err) {
        snprintf(c->damage, sizeof c->damage,
                 "the kernel cache file %s/%s %s, and it cannot be moved aside (%s); kernels are "
                 "kept in this process only: remove %s/data.mdb and %s/lock.mdb",
                 c->dir, file, why, strerror(err), c->dir, c->dir);
        add_warning(c, "%s", c->damage);
        return false;
    }
    if (*to)
        snprintf(c->damage, sizeof c->damage,
                 "the kernel cache file %s/%s %s; moved it aside to %s (kept for a bug report: "
                 "delete it when done) and started an empty cache", c->dir, file, why, to);
    else
        snprintf(c->damage, sizeof c->damage,
                 "the kernel cache file %s/%s %s; another process has moved it aside already, "
                 "and this one uses the new cache", c->dir, file, why);
    add_warning(c, "%s", c->damage);
    return true;
}

/* Walks the snapshot a read transaction pins, with pread (fcc_check_tree): 0 good, 1 damaged
 * (why), -1 cannot judge. Runs before any database is opened: opening one reads its pages
 * through the map. */
static int check_snapshot(fcc_cache *c, char *why, size_t size) {
    MDB_txn *txn;
    int rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn);
    if (rc) {
        if (!lmdb_damage(rc)) return -1;
        snprintf(why, size, "is not usable by LMDB (%s)", mdb_strerror(rc));
        return 1;
    }
    mdb_filehandle_t fd;
    int result = mdb_env_get_fd(c->env, &fd) == 0
                     ? fcc_check_tree(fd, (uint64_t)mdb_txn_id(txn), why, size) : -1;
    mdb_txn_abort(txn);
    return result;
}

typedef enum open_result { OPEN_DONE, OPEN_FAILED, OPEN_AGAIN } open_result;

/* One try at opening the files in c->dir (see open_env): OPEN_AGAIN after damaged files were
 * moved aside. */
static open_result open_files(fcc_cache *c, int mkdir_err) {
    (void)mkdir_err;
    char *data = str_printf("%s/data.mdb", c->dir), *lock = str_printf("%s/lock.mdb", c->dir);
    if (!data || !lock) {
        free(data);
        free(lock);
        add_warning(c, "out of memory opening the kernel cache; kernels are kept in this "
                       "process only");
        return OPEN_FAILED;
    }
    struct stat st;
    bool have_data = access(data, R_OK) == 0;
    bool no_data = !have_data && stat(data, &st) != 0 && errno == ENOENT;
    if (c->no_create && no_data) {
        free(data);
        free(lock);
        c->absent = true;
        return OPEN_FAILED;
    }
    bool read_only = c->want_read_only;
    if (!read_only && access(c->dir, W_OK) != 0) {
        int err = errno;
        if (!have_data) {
            add_warning(c, "the kernel cache directory %s is not writable (%s); kernels are "
                           "kept in this process only", c->dir, strerror(err));
            free(data);
            free(lock);
            return OPEN_FAILED;
        }
        add_warning(c, "the kernel cache directory %s is not writable (%s); using it "
                       "read-only, new kernels are kept in this process only",
                    c->dir, strerror(err));
        read_only = true;
    }
    /* The files, checked before LMDB maps them: a short file is a SIGBUS at the first touch. */
    char why[512];
    memset(&c->data_id, 0, sizeof c->data_id);
    fcc_file_state ds = fcc_check_data_file(data, why, sizeof why, &c->data_id);
    fcc_file_state ls = ds == FCC_FILE_DAMAGED ? FCC_FILE_OK
                                               : fcc_check_lock_file(lock, why, sizeof why);
    free(data);
    free(lock);
    if (ds == FCC_FILE_NONE && (read_only || c->no_create)) {
        c->absent = true; /* an empty data.mdb: LMDB would make a store of it, not read one */
        return OPEN_FAILED;
    }
    if (ds == FCC_FILE_DAMAGED || ls == FCC_FILE_DAMAGED || ls == FCC_FILE_DAMAGED_IN_USE)
        return handle_damage(c, ds == FCC_FILE_DAMAGED ? "data.mdb" : "lock.mdb", why,
                             read_only, ls == FCC_FILE_DAMAGED_IN_USE)
                   ? OPEN_AGAIN : OPEN_FAILED;
    for (;;) {
        MDB_env *env;
        int rc = mdb_env_create(&env);
        if (rc) {
            add_warning(c, "cannot create an LMDB environment: %s; kernels are kept in this "
                           "process only", mdb_strerror(rc));
            return OPEN_FAILED;
        }
        mdb_env_set_maxdbs(env, 2);
        mdb_env_set_mapsize(env, (size_t)c->initial);
        rc = mdb_env_open(env, c->dir,
                          MDB_NOTLS | MDB_NOMETASYNC | (read_only ? MDB_RDONLY : 0), 0644);
        if (rc) {
            mdb_env_close(env);
            if (!read_only && have_data && (rc == EACCES || rc == EROFS || rc == EPERM)) {
                add_warning(c, "cannot write the kernel cache in %s (%s); using it read-only, "
                               "new kernels are kept in this process only",
                            c->dir, mdb_strerror(rc));
                read_only = true;
                continue;
            }
            if (lmdb_damage(rc)) {
                snprintf(why, sizeof why, "is not usable by LMDB (%s)", mdb_strerror(rc));
                return handle_damage(c, "data.mdb", why, read_only, false)
                           ? OPEN_AGAIN : OPEN_FAILED;
            }
            add_warning(c, "cannot open the kernel cache in %s: %s; kernels are kept in this "
                           "process only", c->dir, mdb_strerror(rc));
            return OPEN_FAILED;
        }
        c->env = env;
        break;
    }
    c->read_only = read_only;
    int dead = 0;
    mdb_reader_check(c->env, &dead); /* slots of processes killed while reading */
    /* Take the size the environment has grown to, if larger than ours (sizes only grow). */
    if (mdb_env_set_mapsize(c->env, 0) == 0 && map_size_now(c) < c->initial)
        mdb_env_set_mapsize(c->env, (size_t)c->initial);
    int rc = check_snapshot(c, why, sizeof why);
    if (rc == 1) {
        mdb_env_close(c->env);
        c->env = NULL;
        c->read_only = false;
        return handle_damage(c, "data.mdb", why, read_only, false)
                   ? OPEN_AGAIN : OPEN_FAILED;
    }
    if (read_only) {
        MDB_txn *txn;
        rc = txn_begin(c, MDB_RDONLY, &txn);
        if (!rc) {
            rc = open_dbis(c, txn, NULL);
            if (!rc)
                rc = mdb_txn_commit(txn); /* commit makes the handles visible to later txns */
            else
                mdb_txn_abort(txn);
        }
        if (rc == MDB_NOTFOUND) rc = 0; /* no databases yet: an empty cache */
        else if (!rc) c->have_dbis = true;
    } else {
        c->last_rc = 0;
        rc = run_write(c, open_dbis, NULL, 0, false, "opening the kernel cache") ? -1 : 0;
        c->have_dbis = rc == 0;
        if (rc && lmdb_damage(c->last_rc)) rc = c->last_rc;
    }
    if (rc && lmdb_damage(rc)) {
        mdb_env_close(c->env);
        c->env = NULL;
        c->read_only = false;
        c->have_dbis = false;
        snprintf(why, sizeof why, "is not usable as a kernel cache (%s)", mdb_strerror(rc));
        return handle_damage(c, "data.mdb", why, read_only, false)
                   ? OPEN_AGAIN : OPEN_FAILED;
    }
    if (rc) {
        add_warning(c, "cannot open the kernel cache databases in %s: %s; kernels are kept in "
                       "this process only", c->dir, rc < 0 ? c->errmsg : mdb_strerror(rc));
        mdb_env_close(c->env);
        c->env = NULL;
        c->read_only = false;
        return OPEN_FAILED;
    }
    c->persistent = true;
    return OPEN_DONE;
}

/* Opens the LMDB environment in c->dir, or leaves the store memory-only with a warning.
 * no_create: a missing directory or data file is no store yet (c->absent, no warning) rather
 * than something to create. Damaged files are moved aside and a fresh store opened (a
 * read-only or no_create open leaves them and reads as empty). */
static void open_env(fcc_cache *c, int mkdir_err, uint64_t initial, bool want_read_only,
                     bool no_create) {
    c->initial = initial;
    c->want_read_only = want_read_only;
    c->no_create = no_create;
    struct stat st;
    if (no_create && stat(c->dir, &st) != 0 && errno == ENOENT) {
        c->absent = true;
        return;
    }
    if (stat(c->dir, &st) != 0) {
        add_warning(c, "cannot use the kernel cache directory %s: %s; kernels are kept in this "
                       "process only", c->dir, strerror(mkdir_err ? mkdir_err : errno));
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        add_warning(c, "the kernel cache directory %s is not a directory; kernels are kept in "
                       "this process only", c->dir);
        return;
    }
    /* Twice at most: a fresh store is not damaged, unless another process keeps damaging it. */
    for (int round = 0; round < 3 && open_files(c, mkdir_err) == OPEN_AGAIN; round++) {}
}

/* LMDB reported damage (rc) while the store was in use: close it, move the files aside and
 * open a fresh store, as an open would have; a notice on stderr says so. Entries already in
 * the in-process map stay (they were checked). Returns whether a disk store is open again. */
static bool recover(fcc_cache *c, int rc, const char *what) {
    char why[256];
    snprintf(why, sizeof why, "is damaged (LMDB reports \"%s\" while %s)", mdb_strerror(rc),
             what);
    mdb_env_close(c->env);
    c->env = NULL;
    c->persistent = c->have_dbis = false;
    bool read_only = c->read_only;
    c->read_only = false;
    c->pending = 0;
    for (size_t i = 0; i < c->nslots; i++)
        if (c->slots[i]) c->slots[i]->touch_pending = false;
    if (handle_damage(c, "data.mdb", why, read_only, false))
        for (int round = 0; round < 2 && open_files(c, 0) == OPEN_AGAIN; round++) {}
    notice(c, NOTICE_DAMAGE, c->damage);
    return c->persistent && c->have_dbis;
}

fc_status fcc_open(const fcc_options *opts, fcc_cache **out) {
    if (!out) return FC_ERR_NULL;
    *out = NULL;
    fcc_options o = opts ? *opts : fcc_options_default();
    char size_warning[200] = "";
    uint64_t cap = o.max_map_size;
    const char *e = getenv("FUSEC_CACHE_MAX");
    if (!cap && e && *e) {
        if (!parse_size(e, &cap)) {
            snprintf(size_warning, sizeof size_warning,
                     "FUSEC_CACHE_MAX=\"%.64s\" is not a size (like 512M or 2G); using the "
                     "default, 2G", e);
            cap = 0;
        } else if (cap < FCC_MIN_MAX_MAP_SIZE) {
            snprintf(size_warning, sizeof size_warning,
                     "FUSEC_CACHE_MAX=\"%.64s\" is smaller than the least usable cache "
                     "(1M: LMDB's own pages and a few kernels); using 1M", e);
            cap = FCC_MIN_MAX_MAP_SIZE;
        }
    }
    if (!cap) cap = FCC_DEFAULT_MAX_MAP_SIZE;
    uint64_t initial = o.initial_map_size;
    if (!initial) initial = FCC_DEFAULT_INITIAL_MAP_SIZE < cap ? FCC_DEFAULT_INITIAL_MAP_SIZE : cap;
    if (initial < (64u << 10)) initial = 64u << 10; /* room for LMDB's own pages */
    initial = page_round(initial);
    cap = page_round(cap);
    if (cap < initial || o.require_cached > 1 || o.require_cached < -1) return FC_ERR_INVALID;
    bool require = o.require_cached == 1;
    if (o.require_cached < 0) {
        const char *r = getenv("FUSEC_REQUIRE_CACHED");
        require = r && *r && strcmp(r, "0") != 0;
    }

    char *dir = NULL;
    bool no_dir = false;
    if (!o.memory_only) {
        const char *d;
        if (o.dir && *o.dir)
            dir = strdup(o.dir);
        else if ((d = getenv("FUSEC_CACHE_DIR")) && *d)
            dir = strdup(d);
        else if ((d = getenv("XDG_CACHE_HOME")) && d[0] == '/')
            dir = str_printf("%s/fusec", d);
        else if ((d = getenv("HOME")) && *d)
            dir = str_printf("%s/.cache/fusec", d);
        else
            no_dir = true;
        if (!dir && !no_dir) return FC_ERR_NOMEM;
    }
    int mkdir_err = 0;
    if (dir) {
        if (!o.read_only && !o.no_create) mkdir_err = make_dirs(dir);
        if (mkdir_err == ENOMEM) {
            free(dir);
            return FC_ERR_NOMEM;
        }
        char *real = realpath(dir, NULL);
        if (real) {
            free(dir);
            dir = real;
        }
    }

    pthread_mutex_lock(&registry_mu);
    if (dir)
        for (fcc_cache *s = registry; s; s = s->next)
            if (s->pid == getpid() && strcmp(s->dir, dir) == 0) {
                s->refs++;
                pthread_mutex_unlock(&registry_mu);
                free(dir);
                *out = s;
                return FC_OK;
            }
    fcc_cache *c = calloc(1, sizeof *c);
    if (!c) {
        pthread_mutex_unlock(&registry_mu);
        free(dir);
        return FC_ERR_NOMEM;
    }
    c->refs = 1;
    c->pid = getpid();
    c->dir = dir;
    c->cap = cap;
    c->slack = page_round(cap / 16 > (256u << 10) ? cap / 16 : (256u << 10));
    c->touch_interval_us = o.touch_interval_us;
    c->require_cached = require;
    pthread_mutex_init(&c->mu, NULL);
    if (size_warning[0]) add_warning(c, "%s", size_warning);
    if (no_dir)
        add_warning(c, "no kernel cache directory ($FUSEC_CACHE_DIR, $XDG_CACHE_HOME and $HOME "
                       "are unset); kernels are kept in this process only");
    if (dir) open_env(c, mkdir_err, initial, o.read_only, o.read_only || o.no_create);
    c->stats.map_cap = cap;
    if (dir) {
        c->next = registry;
        registry = c;
    }
    pthread_mutex_unlock(&registry_mu);
    *out = c;
    return FC_OK;
}

void fcc_close(fcc_cache *c) {
    if (!c) return;
    pthread_mutex_lock(&registry_mu);
    if (--c->refs > 0) {
        pthread_mutex_unlock(&registry_mu);
        return;
    }
    for (fcc_cache **p = &registry; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    pthread_mutex_unlock(&registry_mu);
    /* A store inherited across fork() belongs to the parent: leave its environment alone. */
    if (c->env && c->pid == getpid()) {
        pthread_mutex_lock(&c->mu);
        if (c->pending && !c->read_only) disk_write(c, NULL, 0);
        pthread_mutex_unlock(&c->mu);
        mdb_env_close(c->env);
    }
    for (size_t i = 0; i < c->nslots; i++)
        if (c->slots[i]) free_entry(c->slots[i]);
    free(c->slots);
    while (c->retired) {
        mem_entry *e = c->retired;
        c->retired = e->next_retired;
        free_entry(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c->dir);
    free(c);
}

const char *fcc_dir(const fcc_cache *c) { return c ? c->dir : NULL; }
bool fcc_is_persistent(const fcc_cache *c) { return c && c->persistent; }
bool fcc_is_absent(const fcc_cache *c) { return c && c->absent; }
bool fcc_is_read_only(const fcc_cache *c) { return c && c->read_only; }
bool fcc_require_cached(const fcc_cache *c) { return c && c->require_cached; }
const char *fcc_errmsg(const fcc_cache *c) { return c ? c->errmsg : ""; }
const char *fcc_damage(const fcc_cache *c) { return c && c->damage[0] ? c->damage : NULL; }

const char *fcc_take_warning(fcc_cache *c) {
    if (!c) return NULL;
    pthread_mutex_lock(&c->mu);
    const char *w = !c->warning_taken && c->warning[0] ? c->warning : NULL;
    c->warning_taken = true;
    pthread_mutex_unlock(&c->mu);
    return w;
}

/* ---- get / put / flush ------------------------------------------------------------------- */

static void fill_entry(const mem_entry *e, fcc_entry *out) {
    out->cubin = e->parsed.cubin;
    out->cubin_size = (size_t)e->parsed.cubin_size;
    out->meta = e->parsed.meta;
    out->meta_size = (size_t)e->parsed.meta_size;
    out->kernel_name = e->parsed.name;
    out->summary = e->parsed.summary;
}

/* A read that failed with rc (its transaction ended): damage is recovered from (the files are
 * moved aside), and the message says what happened. */
static fc_status read_error(fcc_cache *c, int rc, const char *what) {
    if (rc == ENOMEM) {
        set_err(c, "%s: out of memory", what);
        return FC_ERR_NOMEM;
    }
    if (lmdb_damage(rc) && c->persistent) {
        recover(c, rc, what);
        set_err(c, "%s", c->damage);
        return FC_ERR_IO;
    }
    set_err(c, "%s: %s", what, mdb_strerror(rc));
    return FC_ERR_IO;
}

/* Loads key from disk into the map. *e NULL: not there, or bad (counted). */
static fc_status disk_load(fcc_cache *c, const fcc_key *key, mem_entry **e) {
    *e = NULL;
    MDB_txn *txn;
    int rc = txn_begin(c, MDB_RDONLY, &txn);
    if (rc) {
        read_error(c, rc, "reading the kernel cache");
        return FC_OK; /* a disk problem is a miss */
    }
    MDB_val k = {16, (void *)key->bytes}, v;
    rc = mdb_get(txn, c->dbi_entries, &k, &v);
    if (rc) {
        mdb_txn_abort(txn);
        if (rc != MDB_NOTFOUND) read_error(c, rc, "reading the kernel cache");
        return FC_OK;
    }
    uint8_t *copy = malloc(v.mv_size ? v.mv_size : 1);
    if (!copy) {
        mdb_txn_abort(txn);
        return FC_ERR_NOMEM;
    }
    memcpy(copy, v.mv_data, v.mv_size);
    size_t len = v.mv_size;
    uint64_t stamp = read_stamp(c, txn, key->bytes);
    mdb_txn_abort(txn);
    fcc_problem problem = parse_value(copy, len, key->bytes, NULL);
    if (problem != FCC_PROBLEM_NONE) {
        free(copy);
        c->stats.bad_entries++;
        set_err(c, "ignored a bad kernel cache entry (%s)", fcc_problem_name(problem));
        return FC_OK;
    }
    fc_status st = map_add_value(c, key, copy, len, stamp, e);
    if (st) free(copy);
    return st;
}

fc_status fcc_get(fcc_cache *c, const fcc_key *key, fcc_entry *out, bool *found) {
    if (found) *found = false;
    if (!c || !key || !found) return FC_ERR_NULL;
    pthread_mutex_lock(&c->mu);
    fc_status st = FC_OK;
    mem_entry *e = map_find(c, key);
    if (e) {
        c->stats.memory_hits++;
    } else if (c->persistent && c->have_dbis) {
        st = disk_load(c, key, &e);
        if (e) c->stats.disk_hits++;
    }
    if (e) {
        note_use(c, e, now_us());
        if (out) fill_entry(e, out);
        *found = true;
    } else if (!st) {
        c->stats.misses++;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

fc_status fcc_put(fcc_cache *c, const fcc_key_fields *fields, const char *summary,
                  const void *cubin, size_t cubin_size, const void *meta, size_t meta_size) {
    if (!c || (!cubin && cubin_size) || (!meta && meta_size)) return FC_ERR_NULL;
    fc_status st = check_fields(fields);
    if (st) return st;
    if (!summary) summary = "";
    if (cubin_size > MAX_BLOB_SIZE || meta_size > MAX_BLOB_SIZE ||
        strlen(summary) > MAX_SUMMARY_LEN)
        return FC_ERR_INVALID;
    fcc_key key;
    key_and_field_hashes(fields, &key, NULL); /* the summary describes; it never keys */
    uint8_t *value;
    size_t len;
    if ((st = build_value(&key, fields, summary, cubin, cubin_size, meta, meta_size, &value,
                          &len)))
        return st;
    pthread_mutex_lock(&c->mu);
    c->stats.puts++;
    fc_status disk = FC_OK;
    bool on_disk = false;
    if (c->persistent && !c->read_only) {
        record r = {key, value, len, now_us()};
        disk = disk_write(c, &r, 1);
        on_disk = disk == FC_OK;
        if (disk) c->stats.put_failures++;
    }
    mem_entry *e;
    st = map_add_value(c, &key, value, len, on_disk ? now_us() : 0, &e);
    if (st) {
        free(value);
        set_err(c, "out of memory");
    }
    pthread_mutex_unlock(&c->mu);
    return st ? st : disk;
}

fc_status fcc_flush(fcc_cache *c) {
    if (!c) return FC_ERR_NULL;
    pthread_mutex_lock(&c->mu);
    fc_status st = FC_OK;
    if (c->persistent && !c->read_only && c->pending) st = disk_write(c, NULL, 0);
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* ---- compiling once across processes -------------------------------------------------------- */

/* A lock per key: an flock'd file DIR/locks/KEY.lock. Not LMDB's write transaction: holding it
 * through a compile (seconds) would stop every other process's writes, of every key; flock
 * locks one key, and the kernel drops it when its holder dies, so a crashed compiler never
 * blocks the others (the bounded wait covers one that hangs). */
fc_status fcc_lock_key(fcc_cache *c, const fcc_key *key, unsigned wait_ms, int *handle) {
    if (handle) *handle = -1;
    if (!c || !key || !handle) return FC_ERR_NULL;
    pthread_mutex_lock(&c->mu);
    bool usable = c->persistent && !c->read_only && c->dir;
    char *dir = usable ? str_printf("%s/locks", c->dir) : NULL;
    pthread_mutex_unlock(&c->mu);
    if (!usable) return FC_OK; /* nothing shared to store into: nothing to wait for */
    if (!dir) return FC_ERR_NOMEM;
    char hex[33];
    fcc_key_to_hex(key, hex);
    char *path = str_printf("%s/%s.lock", dir, hex);
    if (!path) {
        free(dir);
        return FC_ERR_NOMEM;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        free(dir);
        free(path);
        return FC_OK; /* no lock: compile anyway, as before */
    }
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) break;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            /* The holder before us unlinks the file when done: a lock on an unlinked file
             * excludes nobody, so only one on the file at the path counts. */
            struct stat a, b;
            if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
                a.st_dev == b.st_dev) {
                *handle = fd;
                break;
            }
            close(fd);
            continue;
        }
        close(fd);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double ms = (double)(now.tv_sec - t0.tv_sec) * 1e3 + (double)(now.tv_nsec - t0.tv_nsec) / 1e6;
        if (ms >= wait_ms) break; /* a holder that hangs: compile anyway */
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    free(dir);
    free(path);
    return FC_OK;
}

void fcc_unlock_key(fcc_cache *c, const fcc_key *key, int handle) {
    if (!c || !key || handle < 0) return;
    char hex[33];
    fcc_key_to_hex(key, hex);
    char *path = str_printf("%s/locks/%s.lock", c->dir, hex);
    if (path) unlink(path); /* while still held: see fcc_lock_key */
    free(path);
    close(handle);
}

/* ---- stats, list, verify, clear ---------------------------------------------------------- */

/* Begins a read transaction on the disk store. An absent store reads as empty: FC_OK with
 * *txn NULL, and the caller walks nothing. */
static fc_status begin_read(fcc_cache *c, MDB_txn **txn, const char *what) {
    *txn = NULL;
    if (c->absent) return FC_OK;
    if (!c->persistent) {
        set_err(c, "%s: no kernel cache on disk%s%s", what, c->warning[0] ? ": " : "",
                c->warning);
        return FC_ERR_IO;
    }
    int rc = txn_begin(c, MDB_RDONLY, txn);
    if (rc) {
        *txn = NULL;
        return read_error(c, rc, what);
    }
    return FC_OK;
}

/* Counts entries and bytes; returns MDB_NOTFOUND at the end of a good walk. */
static int walk_sizes(fcc_cache *c, MDB_txn *txn, fcc_stats *out) {
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, c->dbi_entries, &cur);
    if (rc) return rc;
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        out->entries++;
        out->bytes += v.mv_size;
    }
    mdb_cursor_close(cur);
    return rc;
}

fc_status fcc_get_stats(fcc_cache *c, fcc_stats *out) {
    if (!c || !out) return FC_ERR_NULL;
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    out->persistent = c->persistent;
    out->read_only = c->read_only;
    out->memory_entries = c->count;
    out->map_cap = c->cap;
    fc_status st = FC_OK;
    if (c->persistent) {
        MDB_envinfo info;
        MDB_stat ms;
        mdb_env_info(c->env, &info);
        mdb_env_stat(c->env, &ms);
        out->map_size = info.me_mapsize;
        out->map_used = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
        MDB_txn *txn;
        st = begin_read(c, &txn, "reading the kernel cache");
        if (!st) {
            int rc = c->have_dbis ? walk_sizes(c, txn, out) : MDB_NOTFOUND;
            mdb_txn_abort(txn);
            if (rc != MDB_NOTFOUND) st = read_error(c, rc, "reading the kernel cache");
        }
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

static void info_from(fcc_entry_info *info, const uint8_t *key, size_t value_size,
                      uint64_t stamp, fcc_problem problem, const parsed_entry *p) {
    memset(info, 0, sizeof *info);
    memcpy(info->key.bytes, key, 16);
    info->problem = problem;
    info->value_size = value_size;
    info->last_used_us = stamp;
    info->kernel_name = info->arch = info->options = info->summary = "";
    if (problem != FCC_PROBLEM_NONE) return;
    info->created_us = p->created_us;
    info->cubin_size = p->cubin_size;
    info->meta_size = p->meta_size;
    info->source_len = p->source_len;
    info->key_format = p->key_format;
    info->codegen_version = p->codegen_version;
    info->nvrtc_version = p->nvrtc_version;
    memcpy(info->field_hash, p->field_hash, sizeof info->field_hash);
    info->kernel_name = p->name;
    info->arch = p->arch;
    info->options = p->options;
    info->summary = p->summary;
}


/* Walks the entries database (16-byte keys only). A visit returning nonzero stops the walk
 * with that code (WALK_STOP for a plain stop); returns 0 after a complete walk. */
#define WALK_STOP (-1)
typedef int (*entry_visit)(fcc_cache *c, MDB_txn *txn, const MDB_val *k, const MDB_val *v,
                           void *arg);

static int walk_entries(fcc_cache *c, MDB_txn *txn, entry_visit visit, void *arg) {
    if (!c->have_dbis) return 0;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, c->dbi_entries, &cur);
    if (rc) return rc;
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 16) continue;
        if ((rc = visit(c, txn, &k, &v, arg))) break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

typedef struct list_arg {
    int (*fn)(const fcc_entry_info *info, void *user);
    void *user;
} list_arg;

static int list_visit(fcc_cache *c, MDB_txn *txn, const MDB_val *k, const MDB_val *v,
                      void *arg) {
    list_arg *a = arg;
    parsed_entry p = {0};
    fcc_problem problem = parse_value(v->mv_data, v->mv_size, k->mv_data, &p);
    fcc_entry_info info;
    info_from(&info, k->mv_data, v->mv_size, read_stamp(c, txn, k->mv_data), problem, &p);
    return a->fn(&info, a->user) ? WALK_STOP : 0;
}

/* Runs visit over every entry in a read transaction, mapping errors to a status. */
static fc_status read_walk(fcc_cache *c, entry_visit visit, void *arg, const char *what) {
    MDB_txn *txn;
    fc_status st = begin_read(c, &txn, what);
    if (st || !txn) return st;
    int rc = walk_entries(c, txn, visit, arg);
    mdb_txn_abort(txn);
    return rc && rc != WALK_STOP ? read_error(c, rc, what) : FC_OK;
}

fc_status fcc_list(fcc_cache *c, int (*fn)(const fcc_entry_info *info, void *user),
                   void *user) {
    if (!c || !fn) return FC_ERR_NULL;
    pthread_mutex_lock(&c->mu);
    list_arg a = {fn, user};
    fc_status st = read_walk(c, list_visit, &a, "listing the kernel cache");
    pthread_mutex_unlock(&c->mu);
    return st;
}

typedef struct bad_key {
    uint8_t key[16];
    fcc_problem problem;
} bad_key;

typedef struct key_list {
    bad_key *v;
    size_t n, cap;
} key_list;

static int key_list_add(key_list *l, const void *key, fcc_problem problem) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 16;
        bad_key *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) return ENOMEM;
        l->v = nv;
        l->cap = nc;
    }
    memcpy(l->v[l->n].key, key, 16);
    l->v[l->n++].problem = problem;
    return 0;
}

typedef struct verify_arg {
    key_list bad, orphans;
    uint64_t checked, deleted;
} verify_arg;

static int verify_visit(fcc_cache *c, MDB_txn *txn, const MDB_val *k, const MDB_val *v,
                        void *arg) {
    (void)c;
    (void)txn;
    verify_arg *a = arg;
    a->checked++;
    fcc_problem problem = parse_value(v->mv_data, v->mv_size, k->mv_data, NULL);
    return problem == FCC_PROBLEM_NONE ? 0 : key_list_add(&a->bad, k->mv_data, problem);
}

/* Stamps whose entry is gone (left by a process that died between writes of an older
 * format, or by hand): harmless, but verify reports and removes them. */
static int find_orphans(fcc_cache *c, MDB_txn *txn, verify_arg *a) {
    if (!c->have_dbis) return 0;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, c->dbi_lru, &cur);
    if (rc) return rc;
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 16) continue;
        MDB_val ev;
        rc = mdb_get(txn, c->dbi_entries, &k, &ev);
        if (rc == MDB_NOTFOUND)
            rc = key_list_add(&a->orphans, k.mv_data, FCC_PROBLEM_NONE);
        if (rc) break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int delete_bad_body(fcc_cache *c, MDB_txn *txn, void *arg) {
    verify_arg *a = arg;
    a->deleted = 0;
    for (size_t i = 0; i < a->bad.n; i++) {
        MDB_val k = {16, a->bad.v[i].key}, v;
        int rc = mdb_get(txn, c->dbi_entries, &k, &v);
        if (rc == MDB_NOTFOUND) continue;
        if (rc) return rc;
        if (parse_value(v.mv_data, v.mv_size, k.mv_data, NULL) == FCC_PROBLEM_NONE)
            continue; /* rewritten by another process since the walk */
        if ((rc = mdb_del(txn, c->dbi_entries, &k, NULL))) return rc;
        rc = mdb_del(txn, c->dbi_lru, &k, NULL);
        if (rc && rc != MDB_NOTFOUND) return rc;
        a->deleted++;
    }
    for (size_t i = 0; i < a->orphans.n; i++) {
        MDB_val k = {16, a->orphans.v[i].key}, v;
        int rc = mdb_get(txn, c->dbi_entries, &k, &v);
        if (rc == 0) continue;
        if (rc != MDB_NOTFOUND) return rc;
        rc = mdb_del(txn, c->dbi_lru, &k, NULL);
        if (rc && rc != MDB_NOTFOUND) return rc;
    }
    return 0;
}

fc_status fcc_verify(fcc_cache *c, bool delete_bad,
                     void (*report)(const fcc_key *key, fcc_problem problem, void *user),
                     void *user, fcc_verify_result *out) {
    if (!c || !out) return FC_ERR_NULL;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->mu);
    verify_arg a;
    memset(&a, 0, sizeof a);
    const char *what = "verifying the kernel cache";
    MDB_txn *txn;
    fc_status st = begin_read(c, &txn, what);
    if (!st && txn) {
        int rc = walk_entries(c, txn, verify_visit, &a);
        if (!rc) rc = find_orphans(c, txn, &a);
        mdb_txn_abort(txn);
        if (rc) st = read_error(c, rc, what);
    }
    if (!st) {
        out->checked = a.checked;
        out->bad = a.bad.n;
        out->orphan_stamps = a.orphans.n;
        for (size_t i = 0; report && i < a.bad.n; i++) {
            fcc_key key;
            memcpy(key.bytes, a.bad.v[i].key, 16);
            report(&key, a.bad.v[i].problem, user);
        }
        if (delete_bad && (a.bad.n || a.orphans.n)) {
            if (c->read_only) {
                set_err(c, "%s: the cache is read-only, nothing deleted", what);
                st = FC_ERR_IO;
            } else {
                st = run_write(c, delete_bad_body, &a, 0, false, what);
                if (!st) out->deleted = a.deleted;
            }
        }
    }
    free(a.bad.v);
    free(a.orphans.v);
    pthread_mutex_unlock(&c->mu);
    return st;
}

static int clear_body(fcc_cache *c, MDB_txn *txn, void *arg) {
    (void)arg;
    int rc = mdb_drop(txn, c->dbi_entries, 0);
    return rc ? rc : mdb_drop(txn, c->dbi_lru, 0);
}

fc_status fcc_clear(fcc_cache *c) {
    if (!c) return FC_ERR_NULL;
    pthread_mutex_lock(&c->mu);
    fc_status st = FC_OK;
    if (c->persistent && c->read_only) {
        set_err(c, "clearing the kernel cache: it is read-only");
        st = FC_ERR_IO;
    } else if (c->persistent) {
        st = run_write(c, clear_body, NULL, 0, false, "clearing the kernel cache");
    }
    if (!st) map_clear(c);
    pthread_mutex_unlock(&c->mu);
    return st;
}

static void appendf(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- export / import --------------------------------------------------------------------- */

static const char export_magic[8] = {'F', 'U', 'S', 'E', 'C', 'E', 'X', 'P'};
#define TAG_ENTRY 0x52544E45u /* "ENTR" */
#define TAG_END 0x00444E45u   /* "END" */
#define EXPORT_SIGNED 1u      /* header flag: an HMAC-SHA256 follows the checksum */
#define MAX_MANIFEST (64u << 10)
#define MAX_KINDS 32          /* distinct archs (and versions) an export may hold */

/* What an export holds: the distinct values of the entries' fields that say what they are
 * built for. Written as text in the header (format 2); import checks every entry against it. */
typedef struct manifest {
    uint64_t entries;
    int narch, nnvrtc, ncodegen, nformat;
    char arch[MAX_KINDS][MAX_ARCH_LEN + 1];
    uint32_t nvrtc[MAX_KINDS], codegen[MAX_KINDS], format[MAX_KINDS];
} manifest;

/* Adds v to set (n values) unless there; false when full. */
static bool set_add(uint32_t *set, int *n, uint32_t v) {
    for (int i = 0; i < *n; i++)
        if (set[i] == v) return true;
    if (*n == MAX_KINDS) return false;
    set[(*n)++] = v;
    return true;
}
static bool set_has(const uint32_t *set, int n, uint32_t v) {
    for (int i = 0; i < n; i++)
        if (set[i] == v) return true;
    return false;
}
static int arch_index(const manifest *m, const char *arch) {
    for (int i = 0; i < m->narch; i++)
        if (strcmp(m->arch[i], arch) == 0) return i;
    return -1;
}

static bool manifest_add(manifest *m, const parsed_entry *p) {
    m->entries++;
    if (arch_index(m, p->arch) < 0) {
        if (m->narch == MAX_KINDS) return false;
        snprintf(m->arch[m->narch++], sizeof m->arch[0], "%s", p->arch);
    }
    return set_add(m->nvrtc, &m->nnvrtc, p->nvrtc_version) &&
           set_add(m->codegen, &m->ncodegen, p->codegen_version) &&
           set_add(m->format, &m->nformat, p->key_format);
}

/* The header text: "archs: sm_80 sm_90\nnvrtc: 12040\ncodegen: 7\nkey-format: 1\nentries: N\n". */
static char *manifest_text(const manifest *m) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    fprintf(f, "archs:");
    for (int i = 0; i < m->narch; i++) fprintf(f, " %s", m->arch[i]);
    const uint32_t *sets[3] = {m->nvrtc, m->codegen, m->format};
    const int counts[3] = {m->nnvrtc, m->ncodegen, m->nformat};
    static const char *const names[3] = {"nvrtc", "codegen", "key-format"};
    for (int s = 0; s < 3; s++) {
        fprintf(f, "\n%s:", names[s]);
        for (int i = 0; i < counts[s]; i++) fprintf(f, " %" PRIu32, sets[s][i]);
    }
    fprintf(f, "\nentries: %" PRIu64 "\n", m->entries);
    return fclose(f) == 0 ? text : (free(text), NULL);
}

/* Parses manifest_text's output (strictly: it came from a file). */
static bool manifest_parse(const char *text, manifest *m) {
    memset(m, 0, sizeof *m);
    char arch_line[MAX_KINDS * (MAX_ARCH_LEN + 1) + 16];
    const char *p = text;
    if (strncmp(p, "archs:", 6) != 0) return false;
    p += 6;
    size_t n = strcspn(p, "\n");
    if (n >= sizeof arch_line || !p[n]) return false;
    memcpy(arch_line, p, n);
    arch_line[n] = 0;
    p += n + 1;
    for (char *save = NULL, *t = strtok_r(arch_line, " ", &save); t;
         t = strtok_r(NULL, " ", &save)) {
        if (m->narch == MAX_KINDS || !arch_ok(t, strlen(t)) || strlen(t) > MAX_ARCH_LEN)
            return false;
        snprintf(m->arch[m->narch++], sizeof m->arch[0], "%s", t);
    }
    uint32_t *sets[3] = {m->nvrtc, m->codegen, m->format};
    int *counts[3] = {&m->nnvrtc, &m->ncodegen, &m->nformat};
    static const char *const names[3] = {"nvrtc:", "codegen:", "key-format:"};
    for (int s = 0; s < 3; s++) {
        size_t nl = strlen(names[s]);
        if (strncmp(p, names[s], nl) != 0) return false;
        p += nl;
        while (*p == ' ') {
            char *end;
            errno = 0;
            unsigned long v = strtoul(p + 1, &end, 10);
            if (end == p + 1 || errno || v > UINT32_MAX || !set_add(sets[s], counts[s], (uint32_t)v))
                return false;
            p = end;
        }
        if (*p++ != '\n') return false;
    }
    char *end;
    if (strncmp(p, "entries: ", 9) != 0) return false;
    errno = 0;
    m->entries = strtoull(p + 9, &end, 10);
    return !errno && end != p + 9 && end[0] == '\n' && end[1] == 0;
}

/* One line for a person: "3 entries for sm_80 sm_90; NVRTC 12040; codegen 7; key format 1". */
static void manifest_line(const manifest *m, bool is_signed, char *buf, size_t size) {
    size_t len = 0;
    if (size) buf[0] = 0;
    appendf(buf, size, &len, "%" PRIu64 " entr%s for", m->entries, m->entries == 1 ? "y" : "ies");
    for (int i = 0; i < m->narch; i++) appendf(buf, size, &len, " %s", m->arch[i]);
    if (!m->narch) appendf(buf, size, &len, " no arch");
    const uint32_t *sets[3] = {m->nvrtc, m->codegen, m->format};
    const int counts[3] = {m->nnvrtc, m->ncodegen, m->nformat};
    static const char *const names[3] = {"NVRTC", "codegen", "key format"};
    for (int s = 0; s < 3; s++) {
        appendf(buf, size, &len, "; %s", names[s]);
        for (int i = 0; i < counts[s]; i++) appendf(buf, size, &len, " %" PRIu32, sets[s][i]);
    }
    appendf(buf, size, &len, "; %s", is_signed ? "signed (HMAC-SHA256)" : "not signed");
}

typedef struct export_arg {
    FILE *f;
    XXH3_state_t hash;
    fcc_hmac mac;
    bool failed, sign;
    uint64_t count;
    manifest m;
    bool too_many;
} export_arg;

static void out_write(export_arg *a, const void *p, size_t n) {
    if (!a->failed && n && fwrite(p, 1, n, a->f) != n) a->failed = true;
    XXH3_64bits_update(&a->hash, p, n);
    if (a->sign) fcc_hmac_update(&a->mac, p, n);
}

static int manifest_visit(fcc_cache *c, MDB_txn *txn, const MDB_val *k, const MDB_val *v,
                          void *arg) {
    (void)c;
    (void)txn;
    export_arg *a = arg;
    parsed_entry p;
    if (parse_value(v->mv_data, v->mv_size, k->mv_data, &p) != FCC_PROBLEM_NONE) return 0;
    if (!manifest_add(&a->m, &p)) a->too_many = true;
    return a->too_many ? WALK_STOP : 0;
}

static int export_visit(fcc_cache *c, MDB_txn *txn, const MDB_val *k, const MDB_val *v,
                        void *arg) {
    export_arg *a = arg;
    if (parse_value(v->mv_data, v->mv_size, k->mv_data, NULL) != FCC_PROBLEM_NONE) return 0;
    uint8_t rec[40] = {0};
    put_u32(rec, TAG_ENTRY);
    memcpy(rec + 8, k->mv_data, 16);
    put_u64(rec + 24, read_stamp(c, txn, k->mv_data));
    put_u64(rec + 32, v->mv_size);
    out_write(a, rec, sizeof rec);
    out_write(a, v->mv_data, v->mv_size);
    a->count++;
    return a->failed ? WALK_STOP : 0;
}

/* Both walks in one read transaction: the header says what the entries after it are. */
static fc_status export_walks(fcc_cache *c, export_arg *a, const char *what) {
    MDB_txn *txn;
    fc_status st = begin_read(c, &txn, what);
    if (st) return st;
    int rc = txn ? walk_entries(c, txn, manifest_visit, a) : 0;
    if (a->too_many) {
        if (txn) mdb_txn_abort(txn);
        set_err(c, "%s: the cache holds kernels for more than %d archs or versions; export "
                   "fewer", what, MAX_KINDS);
        return FC_ERR_INVALID;
    }
    char *text = rc ? NULL : manifest_text(&a->m);
    if (!rc && !text) rc = ENOMEM;
    if (!rc) {
        uint8_t hdr[24] = {0};
        memcpy(hdr, export_magic, 8);
        put_u32(hdr + 8, FCC_EXPORT_FORMAT_VERSION);
        put_u32(hdr + 12, a->sign ? EXPORT_SIGNED : 0);
        put_u32(hdr + 16, (uint32_t)strlen(text));
        out_write(a, hdr, sizeof hdr);
        out_write(a, text, strlen(text));
        if (txn) rc = walk_entries(c, txn, export_visit, a);
    }
    free(text);
    if (txn) mdb_txn_abort(txn);
    return rc && rc != WALK_STOP ? read_error(c, rc, what) : FC_OK;
}

fc_status fcc_export_signed(fcc_cache *c, const char *path, const void *key, size_t key_len,
                            uint64_t *count) {
    if (count) *count = 0;
    if (!c || !path || (!key && key_len)) return FC_ERR_NULL;
    pthread_mutex_lock(&c->mu);
    const char *what = "exporting the kernel cache";
    fc_status st = FC_OK;
    char *tmp = str_printf("%s.tmp.%ld", path, (long)getpid());
    export_arg *a = calloc(1, sizeof *a);
    if (!tmp || !a) {
        st = FC_ERR_NOMEM;
        goto done;
    }
    if (!c->persistent && !c->absent) { /* absent: an empty cache exports an empty file */
        MDB_txn *unused;
        st = begin_read(c, &unused, what); /* sets the message */
        goto done;
    }
    if (!(a->f = fopen(tmp, "wb"))) {
        set_err(c, "%s: cannot create %s: %s", what, tmp, strerror(errno));
        st = FC_ERR_IO;
        goto done;
    }
    XXH3_INITSTATE(&a->hash);
    XXH3_64bits_reset(&a->hash);
    a->sign = key != NULL;
    if (a->sign) fcc_hmac_init(&a->mac, key, key_len);
    st = export_walks(c, a, what);
    if (!st) {
        uint8_t end[16] = {0}, sum[8];
        put_u32(end, TAG_END);
        put_u64(end + 8, a->count);
        out_write(a, end, sizeof end);
        put_u64(sum, XXH3_64bits_digest(&a->hash));
        out_write(a, sum, 8);
        if (a->sign) { /* over every byte before it, the checksum included */
            uint8_t mac[32];
            fcc_hmac_final(&a->mac, mac);
            if (!a->failed && fwrite(mac, 1, 32, a->f) != 32) a->failed = true;
        }
        if (!a->failed && (fflush(a->f) != 0 || fsync(fileno(a->f)) != 0)) a->failed = true;
    }
    if (fclose(a->f) != 0) a->failed = true;
    a->f = NULL;
    if (!st && a->failed) {
        set_err(c, "%s: writing %s: %s", what, tmp, strerror(errno));
        st = FC_ERR_IO;
    }
    if (!st && rename(tmp, path) != 0) {
        set_err(c, "%s: renaming %s to %s: %s", what, tmp, path, strerror(errno));
        st = FC_ERR_IO;
    }
    if (st) unlink(tmp);
done:
    if (!st && count) *count = a->count;
    free(a);
    free(tmp);
    pthread_mutex_unlock(&c->mu);
    return st;
}

fc_status fcc_export(fcc_cache *c, const char *path, uint64_t *count) {
    return fcc_export_signed(c, path, NULL, 0, count);
}

typedef struct import_batch {
    record recs[64];
    uint8_t *bufs[64];
    size_t n;
    uint64_t bytes, limit;
} import_batch;

static void batch_free(import_batch *b) {
    for (size_t i = 0; i < b->n; i++) free(b->bufs[i]);
    b->n = 0;
    b->bytes = 0;
}

static fc_status batch_flush(fcc_cache *c, import_batch *b) {
    fc_status st = b->n ? disk_write(c, b->recs, b->n) : FC_OK;
    batch_free(b);
    return st;
}

/* An import: the file, what its check pass learnt, and the digests of its entries. The store
 * pass stores an entry only when its SHA-256 is the one the check pass saw: the file may be
 * rewritten between the passes, and what was checked (and signed) is what gets stored. */
typedef struct import_state {
    FILE *f;
    const char *path;
    uint64_t size, pos;
    XXH3_state_t hash;
    fcc_hmac mac;
    const void *key;
    size_t key_len;
    bool sign, is_signed;
    uint32_t version;
    manifest m;
    uint8_t (*digest)[32];
    uint64_t ndigest, capdigest;
} import_state;

static bool in_read(import_state *in, void *p, size_t n, bool hashed) {
    if (n > in->size - in->pos || fread(p, 1, n, in->f) != n) return false;
    if (hashed) XXH3_64bits_update(&in->hash, p, n);
    if (in->sign) fcc_hmac_update(&in->mac, p, n);
    in->pos += n;
    return true;
}

/* The header (format 1: none of it but the version; 2: flags and manifest). */
static fc_status import_header(fcc_cache *c, import_state *in) {
    uint8_t hdr[16];
    const char *path = in->path;
    if (!in_read(in, hdr, sizeof hdr, true) || memcmp(hdr, export_magic, 8) != 0) {
        set_err(c, "%s: not a fusec cache export", path);
        return FC_ERR_PARSE;
    }
    in->version = get_u32(hdr + 8);
    if (in->version < 1 || in->version > FCC_EXPORT_FORMAT_VERSION) {
        set_err(c, "%s: export format %" PRIu32 " is not supported (this fusec reads 1 to %u)",
                path, in->version, FCC_EXPORT_FORMAT_VERSION);
        return FC_ERR_PARSE;
    }
    if (in->version == 1) return FC_OK;
    uint32_t flags = get_u32(hdr + 12);
    uint8_t more[8];
    if (flags & ~EXPORT_SIGNED || !in_read(in, more, 8, true) || get_u32(more) > MAX_MANIFEST ||
        get_u32(more + 4)) {
        set_err(c, "%s: bad export header", path);
        return FC_ERR_PARSE;
    }
    in->is_signed = flags & EXPORT_SIGNED;
    uint32_t len = get_u32(more);
    char *text = malloc(len + 1u);
    if (!text) return FC_ERR_NOMEM;
    bool ok = in_read(in, text, len, true);
    text[ok ? len : 0] = 0;
    ok = ok && strlen(text) == len && manifest_parse(text, &in->m);
    free(text);
    if (!ok) {
        set_err(c, "%s: the export's header does not say what it holds in a form this fusec "
                   "reads", path);
        return FC_ERR_PARSE;
    }
    return FC_OK;
}

/* An entry of a format-2 export must be of an arch and versions its header lists. */
static bool entry_in_manifest(const import_state *in, const parsed_entry *p) {
    const manifest *m = &in->m;
    return in->version < 2 ||
           (arch_index(m, p->arch) >= 0 && set_has(m->nvrtc, m->nnvrtc, p->nvrtc_version) &&
            set_has(m->codegen, m->ncodegen, p->codegen_version) &&
            set_has(m->format, m->nformat, p->key_format));
}

static void entry_digest(const uint8_t *rec, const uint8_t *value, size_t len, uint8_t out[32]) {
    fcc_sha256 s;
    fcc_sha256_init(&s);
    fcc_sha256_update(&s, rec, 32);
    fcc_sha256_update(&s, value, len);
    fcc_sha256_final(&s, out);
}

/* The trailer: count, checksum, and for a signed export its HMAC, checked with the key. */
static fc_status import_trailer(fcc_cache *c, import_state *in, uint64_t n) {
    const char *path = in->path;
    uint8_t cnt[8], sum[8], mac[32], want[32];
    if (!in_read(in, cnt, 8, true)) goto truncated;
    uint64_t digest = XXH3_64bits_digest(&in->hash);
    if (!in_read(in, sum, 8, false)) goto truncated;
    if (get_u64(sum) != digest) {
        set_err(c, "%s: file checksum mismatch", path);
        return FC_ERR_PARSE;
    }
    if (get_u64(cnt) != n || (in->version >= 2 && in->m.entries != n)) {
        set_err(c, "%s: says %" PRIu64 " entries, holds %" PRIu64, path, get_u64(cnt), n);
        return FC_ERR_PARSE;
    }
    if (in->is_signed && in->sign) {
        fcc_hmac_final(&in->mac, want);
        in->sign = false;
        if (!in_read(in, mac, 32, false)) goto truncated;
        if (!fcc_digest_equal(mac, want, 32)) {
            set_err(c, "%s: the signature does not match: the file was changed after it was "
                       "exported, or signed with another key; nothing imported", path);
            return FC_ERR_PARSE;
        }
    } else if (in->is_signed) {
        if (in->size - in->pos != 32) goto truncated;
        set_err(c, "%s: the export is signed; give its key (--key FILE) to import it", path);
        return FC_ERR_PARSE;
    } else if (in->key) {
        set_err(c, "%s: the export is not signed, but a key was given: refusing it (export it "
                   "again with --key FILE)", path);
        return FC_ERR_PARSE;
    }
    if (in->pos != in->size) {
        set_err(c, "%s: trailing bytes after the end record", path);
        return FC_ERR_PARSE;
    }
    return FC_OK;
truncated:
    set_err(c, "%s: truncated trailer", path);
    return FC_ERR_PARSE;
}

/* One pass over an export file: checks everything (store false), or stores the entries the
 * check pass saw (store true). */
static fc_status import_pass(fcc_cache *c, import_state *in, bool store, uint64_t *count) {
    in->pos = 0;
    XXH3_INITSTATE(&in->hash);
    XXH3_64bits_reset(&in->hash);
    in->sign = !store && in->key;
    if (in->sign) fcc_hmac_init(&in->mac, in->key, in->key_len);
    const char *path = in->path;
    import_batch b;
    memset(&b, 0, sizeof b);
    b.limit = c->cap / 8 < (16u << 20) ? c->cap / 8 : (16u << 20);
    uint64_t n = 0;
    fc_status st = import_header(c, in);
    while (!st) {
        uint8_t tag[8];
        if (!in_read(in, tag, sizeof tag, true)) {
            set_err(c, "%s: truncated after %" PRIu64 " entries", path, n);
            st = FC_ERR_PARSE;
            break;
        }
        if (get_u32(tag) == TAG_END) {
            if (!store) st = import_trailer(c, in, n);
            break;
        }
        uint8_t rec[32];
        if (get_u32(tag) != TAG_ENTRY || !in_read(in, rec, sizeof rec, true)) {
            set_err(c, "%s: bad record after %" PRIu64 " entries", path, n);
            st = FC_ERR_PARSE;
            break;
        }
        uint64_t len = get_u64(rec + 24);
        if (len < FCC_ENTRY_HEADER_SIZE || len > in->size - in->pos ||
            (store && n >= in->ndigest)) {
            set_err(c, "%s: entry %" PRIu64 " has a bad size", path, n);
            st = FC_ERR_PARSE;
            break;
        }
        uint8_t *buf = malloc((size_t)len);
        if (!buf) {
            set_err(c, "%s: out of memory", path);
            st = FC_ERR_NOMEM;
            break;
        }
        fcc_problem problem = FCC_PROBLEM_TRUNCATED;
        parsed_entry p;
        if (in_read(in, buf, (size_t)len, true))
            problem = parse_value(buf, (size_t)len, rec, &p);
        uint8_t digest[32];
        if (problem == FCC_PROBLEM_NONE) entry_digest(rec, buf, (size_t)len, digest);
        if (problem != FCC_PROBLEM_NONE) {
            set_err(c, "%s: entry %" PRIu64 ": %s", path, n, fcc_problem_name(problem));
            st = FC_ERR_PARSE;
        } else if (!entry_in_manifest(in, &p)) {
            set_err(c, "%s: entry %" PRIu64 " (kernel for %s, NVRTC %" PRIu32 ", codegen %" PRIu32
                       ") is not of what the export's header says it holds", path, n, p.arch,
                    p.nvrtc_version, p.codegen_version);
            st = FC_ERR_PARSE;
        } else if (store && !fcc_digest_equal(digest, in->digest[n], 32)) {
            set_err(c, "%s: entry %" PRIu64 " changed since the file was checked; stopped "
                       "(entries before it are stored)", path, n);
            st = FC_ERR_PARSE;
        } else if (!store) {
            if (in->ndigest == in->capdigest) {
                uint64_t nc = in->capdigest ? 2 * in->capdigest : 64;
                uint8_t(*nd)[32] = realloc(in->digest, (size_t)nc * 32);
                if (!nd) st = FC_ERR_NOMEM;
                else in->digest = nd, in->capdigest = nc;
            }
            if (!st) memcpy(in->digest[in->ndigest++], digest, 32);
        }
        if (st || !store) {
            free(buf);
            if (st) break;
            n++;
            continue;
        }
        n++;
        record *r = &b.recs[b.n];
        memcpy(r->key.bytes, rec, 16);
        r->value = buf;
        r->len = (size_t)len;
        r->stamp = get_u64(rec + 16);
        b.bufs[b.n++] = buf;
        b.bytes += len;
        if ((b.n == 64 || b.bytes >= b.limit) && (st = batch_flush(c, &b))) break;
    }
    if (!st && store) st = batch_flush(c, &b);
    batch_free(&b);
    *count = n;
    return st;
}

/* Opens path for reading only when it is a regular file: O_NONBLOCK so that a FIFO cannot
 * block the open, fstat before any read so that it cannot block a read. */
static FILE *open_regular(fcc_cache *c, const char *path, uint64_t *size) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        set_err(c, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        set_err(c, "%s: not a regular file (%s); import reads files written by `fusec cache "
                   "export`", path, S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode)
                   ? "a FIFO" : "a device or socket");
        close(fd);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl != -1) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        set_err(c, "%s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    *size = (uint64_t)sb.st_size;
    return f;
}

fc_status fcc_import_signed(fcc_cache *c, const char *path, const void *key, size_t key_len,
                            uint64_t *count, char *holds, size_t holds_size) {
    if (count) *count = 0;
    if (holds && holds_size) holds[0] = 0;
    if (!c || !path || (!key && key_len)) return FC_ERR_NULL;
    pthread_mutex_lock(&c->mu);
    fc_status st = FC_OK;
    uint64_t n = 0;
    import_state *in = calloc(1, sizeof *in);
    if (!in) {
        st = FC_ERR_NOMEM;
    } else if (!c->persistent || c->read_only || !c->have_dbis) {
        set_err(c, "importing into the kernel cache: no writable cache on disk%s%s",
                c->warning[0] ? ": " : "", c->warning);
        st = FC_ERR_IO;
    } else if (!(in->f = open_regular(c, path, &in->size))) {
        st = FC_ERR_IO;
    } else {
        in->path = path;
        in->key = key;
        in->key_len = key_len;
        st = import_pass(c, in, false, &n);
        if (!st && holds) manifest_line(&in->m, in->is_signed, holds, holds_size);
        if (!st && in->version < 2 && holds)
            snprintf(holds, holds_size, "%" PRIu64 " entr%s (export format 1: no header); not "
                     "signed", n, n == 1 ? "y" : "ies");
        if (!st) {
            rewind(in->f);
            st = import_pass(c, in, true, &n);
        }
    }
    if (in && in->f) fclose(in->f);
    if (in) free(in->digest);
    free(in);
    if (!st && count) *count = n;
    pthread_mutex_unlock(&c->mu);
    return st;
}

fc_status fcc_import(fcc_cache *c, const char *path, uint64_t *count) {
    return fcc_import_signed(c, path, NULL, 0, count, NULL, 0);
}

/* ---- explain ----------------------------------------------------------------------------- */

typedef struct explain_arg {
    const fcc_key *want_key;
    const uint64_t *want_hash;
    fcc_explanation *ex;
    bool have_best;
    uint8_t best_key[16];
    int best_tier, best_match;
    uint64_t best_stamp;
} explain_arg;

static void consider(explain_arg *a, const uint8_t *key, const parsed_entry *p, uint64_t stamp) {
    int tier = (p->field_hash[FCC_FIELD_KERNEL_NAME] == a->want_hash[FCC_FIELD_KERNEL_NAME]) +
               (p->field_hash[FCC_FIELD_SOURCE] == a->want_hash[FCC_FIELD_SOURCE]);
    int match = 0;
    for (int i = 0; i < FCC_FIELD_COUNT; i++) match += p->field_hash[i] == a->want_hash[i];
    bool better = !a->have_best || tier > a->best_tier ||
                  (tier == a->best_tier &&
                   (match > a->best_match || (match == a->best_match && stamp > a->best_stamp)));
    if (!better) return;
    a->have_best = true;
    memcpy(a->best_key, key, 16);
    a->best_tier = tier;
    a->best_match = match;
    a->best_stamp = stamp;
}

static int explain_visit(fcc_cache *c, MDB_txn *txn, const MDB_val *k, const MDB_val *v,
                         void *arg) {
    explain_arg *a = arg;
    a->ex->entries_seen++;
    parsed_entry p;
    fcc_problem problem = parse_value(v->mv_data, v->mv_size, k->mv_data, &p);
    if (memcmp(k->mv_data, a->want_key->bytes, 16) == 0) {
        a->ex->exact = true;
        a->ex->exact_problem = problem;
    }
    if (problem == FCC_PROBLEM_NONE) consider(a, k->mv_data, &p, read_stamp(c, txn, k->mv_data));
    return 0;
}

/* Copies s into *pool and returns the copy. */
static const char *pool_copy(char **pool, const char *s) {
    size_t n = strlen(s) + 1;
    memcpy(*pool, s, n);
    const char *copy = *pool;
    *pool += n;
    return copy;
}

/* Allocates the explanation with room for both sets of strings and fills the fixed parts. */
static fcc_explanation *explanation_new(const fcc_key_fields *f, const fcc_key *key,
                                        const uint64_t *hash, const explain_arg *a,
                                        const parsed_entry *best) {
    size_t strings = strlen(f->kernel_name) + strlen(f->arch) + strlen(f->options) + 3;
    if (best)
        strings += strlen(best->name) + strlen(best->arch) + strlen(best->options) +
                   strlen(best->summary) + 4;
    fcc_explanation *ex = malloc(sizeof *ex + strings);
    if (!ex) return NULL;
    *ex = *a->ex;
    char *pool = (char *)(ex + 1);
    fcc_entry_info *w = &ex->wanted;
    memset(w, 0, sizeof *w);
    w->key = *key;
    w->key_format = FCC_KEY_FORMAT_VERSION;
    w->codegen_version = f->codegen_version;
    w->nvrtc_version = f->nvrtc_version;
    w->source_len = f->source_len;
    memcpy(w->field_hash, hash, sizeof w->field_hash);
    w->kernel_name = pool_copy(&pool, f->kernel_name);
    w->arch = pool_copy(&pool, f->arch);
    w->options = pool_copy(&pool, f->options);
    w->summary = "";
    memset(&ex->nearest, 0, sizeof ex->nearest);
    ex->nearest.kernel_name = ex->nearest.arch = ex->nearest.options = ex->nearest.summary = "";
    ex->found = best != NULL;
    ex->differ = 0;
    if (best) {
        info_from(&ex->nearest, a->best_key, 0, a->best_stamp, FCC_PROBLEM_NONE, best);
        ex->nearest.kernel_name = pool_copy(&pool, best->name);
        ex->nearest.arch = pool_copy(&pool, best->arch);
        ex->nearest.options = pool_copy(&pool, best->options);
        ex->nearest.summary = pool_copy(&pool, best->summary);
        for (int i = 0; i < FCC_FIELD_COUNT; i++)
            if (best->field_hash[i] != hash[i]) ex->differ |= 1u << i;
    }
    return ex;
}

fc_status fcc_explain_miss(fcc_cache *c, const fcc_key_fields *fields,
                           fcc_explanation **out) {
    if (!out) return FC_ERR_NULL;
    *out = NULL;
    if (!c) return FC_ERR_NULL;
    fc_status st = check_fields(fields);
    if (st) return st;
    fcc_key key;
    uint64_t hash[FCC_FIELD_COUNT];
    key_and_field_hashes(fields, &key, hash);
    fcc_explanation scratch;
    memset(&scratch, 0, sizeof scratch);
    explain_arg a;
    memset(&a, 0, sizeof a);
    a.want_key = &key;
    a.want_hash = hash;
    a.ex = &scratch;
    pthread_mutex_lock(&c->mu);
    if (c->persistent) {
        const char *what = "explaining a kernel cache miss";
        MDB_txn *txn;
        st = begin_read(c, &txn, what);
        if (!st) {
            int rc = walk_entries(c, txn, explain_visit, &a);
            parsed_entry best;
            MDB_val k = {16, a.best_key}, v;
            if (!rc && a.have_best && (rc = mdb_get(txn, c->dbi_entries, &k, &v)) == 0 &&
                parse_value(v.mv_data, v.mv_size, a.best_key, &best) != FCC_PROBLEM_NONE)
                rc = MDB_CORRUPTED; /* cannot happen: checked in this same snapshot */
            if (!rc && !(*out = explanation_new(fields, &key, hash, &a,
                                                a.have_best ? &best : NULL)))
                st = FC_ERR_NOMEM;
            mdb_txn_abort(txn);
            if (rc) st = read_error(c, rc, what);
        }
    } else {
        const mem_entry *best = NULL;
        for (size_t i = 0; i < c->nslots; i++) {
            const mem_entry *e = c->slots[i];
            if (!e) continue;
            scratch.entries_seen++;
            if (memcmp(e->key.bytes, key.bytes, 16) == 0) scratch.exact = true;
            bool had = a.have_best;
            uint8_t before[16];
            memcpy(before, a.best_key, 16);
            consider(&a, e->key.bytes, &e->parsed, e->disk_stamp);
            if (a.have_best && (!had || memcmp(before, a.best_key, 16) != 0)) best = e;
        }
        if (!(*out = explanation_new(fields, &key, hash, &a, best ? &best->parsed : NULL)))
            st = FC_ERR_NOMEM;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

void fcc_explanation_free(fcc_explanation *ex) { free(ex); }

/* snprintf that appends at *len and keeps counting past the end of buf. */
static void appendf(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void appendf(char *buf, size_t size, size_t *len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*len < size ? buf + *len : NULL, *len < size ? size - *len : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *len += (size_t)n;
}

size_t fcc_explanation_format(const fcc_explanation *ex, char *buf, size_t size) {
    size_t len = 0;
    if (size) buf[0] = 0;
    if (!ex) return 0;
    const fcc_entry_info *w = &ex->wanted, *n = &ex->nearest;
    char hex[33];
    fcc_key_to_hex(&w->key, hex);
    if (ex->exact && ex->exact_problem != FCC_PROBLEM_NONE) {
        appendf(buf, size, &len, "the entry %s exists but is unusable (%s): it is recompiled "
                "and overwritten", hex, fcc_problem_name(ex->exact_problem));
        return len;
    }
    if (ex->exact) {
        appendf(buf, size, &len, "the entry %s is in the cache", hex);
        return len;
    }
    if (!ex->found) {
        if (ex->entries_seen)
            appendf(buf, size, &len, "no usable entry among %" PRIu64 " in the cache",
                    ex->entries_seen);
        else
            appendf(buf, size, &len, "the cache is empty");
        return len;
    }
    char nhex[33];
    fcc_key_to_hex(&n->key, nhex);
    appendf(buf, size, &len, "no entry %s; nearest %s (kernel %s, %s) differs in", hex, nhex,
            n->kernel_name, n->arch);
    const char *sep = " ";
    for (int i = 0; i < FCC_FIELD_COUNT; i++) {
        if (!(ex->differ & 1u << i)) continue;
        appendf(buf, size, &len, "%s%s ", sep, fcc_field_name(i));
        sep = ", ";
        switch (i) {
        case FCC_FIELD_KEY_FORMAT:
            appendf(buf, size, &len, "(%" PRIu32 " wanted, %" PRIu32 " cached)", w->key_format,
                    n->key_format);
            break;
        case FCC_FIELD_CODEGEN:
            appendf(buf, size, &len, "(%" PRIu32 " wanted, %" PRIu32 " cached)",
                    w->codegen_version, n->codegen_version);
            break;
        case FCC_FIELD_SOURCE:
            appendf(buf, size, &len,
                    "(%" PRIu64 " bytes, hash %016" PRIx64 " wanted; %" PRIu64
                    " bytes, hash %016" PRIx64 " cached)",
                    w->source_len, w->field_hash[i], n->source_len, n->field_hash[i]);
            break;
        case FCC_FIELD_OPTIONS:
            appendf(buf, size, &len, "(\"%s\" wanted, \"%s\" cached)", w->options, n->options);
            break;
        case FCC_FIELD_ARCH:
            appendf(buf, size, &len, "(%s wanted, %s cached)", w->arch, n->arch);
            break;
        case FCC_FIELD_NVRTC:
            appendf(buf, size, &len, "(%" PRIu32 ".%" PRIu32 " wanted, %" PRIu32 ".%" PRIu32
                    " cached)", w->nvrtc_version / 1000, w->nvrtc_version % 1000 / 10,
                    n->nvrtc_version / 1000, n->nvrtc_version % 1000 / 10);
            break;
        default:
            appendf(buf, size, &len, "(%s wanted, %s cached)", w->kernel_name, n->kernel_name);
            break;
        }
    }
    if (!ex->differ) appendf(buf, size, &len, " no field (a hash collision?)");
    return len;
}

/* Appends s escaped: stored strings come from files anyone may hand to `fusec cache import`,
 * and must not reach a terminal raw (an escape sequence, a newline that fakes a line). */
static void append_printable(char *buf, size_t size, size_t *len, const char *s) {
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        char esc[8];
        if (ch == '\\') snprintf(esc, sizeof esc, "\\\\");
        else if (ch == '\n') snprintf(esc, sizeof esc, "\\n");
        else if (ch == '\t') snprintf(esc, sizeof esc, "\\t");
        else if (ch < 0x20 || ch >= 0x7f) snprintf(esc, sizeof esc, "\\x%02x", ch);
        else esc[0] = (char)ch, esc[1] = 0;
        appendf(buf, size, len, "%s", esc);
    }
}

size_t fcc_format_list_line(const fcc_entry_info *info, char *buf, size_t size) {
    size_t len = 0;
    if (size) buf[0] = 0;
    if (!info) return 0;
    char hex[33], when[32] = "never";
    fcc_key_to_hex(&info->key, hex);
    if (info->last_used_us) {
        time_t t = (time_t)(info->last_used_us / 1000000u);
        struct tm tm;
        if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    }
    if (info->problem != FCC_PROBLEM_NONE)
        appendf(buf, size, &len, "%s  BAD (%s)  %" PRIu64 " bytes  %s", hex,
                fcc_problem_name(info->problem), info->value_size, when);
    else {
        appendf(buf, size, &len, "%s  %-8s %10" PRIu64 "  %-23s  ", hex, info->arch,
                info->value_size, when);
        if (*info->summary) {
            append_printable(buf, size, &len, info->summary);
        } else { /* entry format 1 has no summary: the kernel's name is all there is */
            appendf(buf, size, &len, "kernel ");
            append_printable(buf, size, &len, info->kernel_name);
        }
    }
    return len;
}
