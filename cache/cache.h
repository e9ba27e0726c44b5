/*
 * cache/cache.h - internal: the compiled-kernel cache (prefix fcc_).
 *
 * A kernel is stored under a key that hashes everything that affects its binary; the value is
 * one record holding the cubin, the codegen's metadata (its launch recipe, opaque here) and the
 * key's fields. Lookups go to an in-process map first, then to an LMDB store on disk shared by
 * every process of the user. Not installed and not exported from the shared library.
 *
 * A short tour (the runtime's compile path, in outline):
 *
 *     fcc_cache *cache;
 *     if (fcc_open(NULL, &cache) != FC_OK) return FC_ERR_NOMEM;   // only NOMEM / INVALID fail
 *     const char *w = fcc_take_warning(cache);                    // e.g. unusable directory
 *     if (w) fprintf(stderr, "fusec: %s\n", w);
 *
 *     fcc_key_fields f = {.codegen_version = 3, .source = src, .source_len = n,
 *                         .options = "-default-device --use_fast_math", .arch = "sm_90",
 *                         .nvrtc_version = 12040, .kernel_name = "fk0"};
 *     fcc_key key;
 *     fcc_key_compute(&f, &key);
 *     fcc_entry e;
 *     bool found;
 *     fcc_get(cache, &key, &e, &found);
 *     if (!found) {
 *         if (fcc_require_cached(cache)) return FC_ERR_...;        // FUSEC_REQUIRE_CACHED=1
 *         ... compile with NVRTC into cubin ...
 *         fcc_put(cache, &f, "elementwise: exp(x0)", cubin, cubin_size, meta, meta_size);
 *                                                                  // failure: still usable
 *     }
 *     ... cuModuleLoadData(e.cubin) ...
 *     fcc_close(cache);
 *
 * The key. XXH3-128 over, in this order and each length-prefixed: the key-format version
 * (FCC_KEY_FORMAT_VERSION), the codegen version, the canonical source, the NVRTC options, the
 * target arch ("sm_90"), the NVRTC version and the kernel name (the name is in the source too;
 * hashing it again costs nothing and keeps the stored value a pure function of the key).
 *
 * The value (entry format 2, little-endian) is a 32-byte header and a payload:
 *
 *     header   0 "FCCE"   4 u16 entry-format version   6 u16 header size (32)   8 u64 zero
 *             16 u64 payload size (value size - 32)    24 u64 XXH3-64 of the payload
 *     payload  0 key[16]   16 u64 created (us since the epoch)   24 u64 x 7 XXH3-64 of each key
 *              field (fcc_field order)   80 u32 key format   84 u32 codegen   88 u32 nvrtc
 *              92 u32 zero   96 u64 source length   104 u32 name length   108 u32 arch length
 *              112 u32 options length   116 u32 summary length   120 u64 meta size
 *              128 u64 cubin size   136 name NUL arch NUL options NUL summary NUL, then meta
 *              and cubin, each at a 16-byte aligned offset, zero padding between; nothing
 *              after the cubin.
 *
 * The summary says what the kernel computes ("reduce over axis 1: sum(exp(x0-x1))"), for
 * `fusec cache list`. It is not a key field: the kernel it describes is the key's. Format 1 is
 * format 2 without the summary (116 was zero, no summary string); such entries are still read,
 * with an empty summary, so a cache written by an older fusec stays valid.
 *
 * Cubin and metadata are one value, written in one transaction: they cannot go out of step.
 * An entry whose magic, version, sizes, checksum, layout or stored key is wrong is a miss,
 * never returned; the next put of that key overwrites it.
 *
 * Last use. A second LMDB database maps key -> last-used time (microseconds since the epoch)
 * and drives LRU eviction. Reads never write: a use is noted in memory when the stamp on disk
 * is older than touch_interval_us (default 60 s) and written with the next put, fcc_flush or
 * fcc_close, in the same transaction as that put. A put stamps its own entry.
 *
 * Size. The LMDB map starts at initial_map_size (or what the store already has: the size only
 * grows) and doubles on MDB_MAP_FULL up to max_map_size; another process's growth is adopted
 * (MDB_MAP_RESIZED, or a larger size found in the environment on MAP_FULL). At the cap the
 * least recently used entries are evicted (at least an eighth of the map, at least twice the
 * new value). LMDB needs a few free pages to delete anything, so when eviction itself finds
 * the map full the map may grow past the cap by at most max_map_size / 16 (and at least 256
 * KiB). A value larger than half the cap is not stored on disk (FC_ERR_IO).
 *
 * The directory: options.dir, else $FUSEC_CACHE_DIR, else $XDG_CACHE_HOME/fusec (absolute
 * XDG_CACHE_HOME only), else $HOME/.cache/fusec. A missing one is created (mode 0755, parents
 * too), except by a read-only or no_create open: there a missing directory or store (no
 * data.mdb) is an absent store (fcc_is_absent), an empty cache with no warning. Its lookups
 * miss, stats / list / verify / export see no entries, clear has nothing to do, and puts stay
 * in memory. When it cannot be used (not a directory, not writable, not a valid LMDB environment),
 * fcc_open still succeeds: the store keeps kernels in the in-process map only, and
 * fcc_take_warning hands back, once, a message saying why. A directory that can be read but
 * not written is opened read-only when it holds a store: lookups use it, puts stay in memory.
 *
 * Damaged files. Before LMDB maps data.mdb, its meta pages, size and every page of the tree
 * about to be used are checked with pread (cache_int.h); LMDB's own corruption reports count
 * too. A writable open moves data.mdb and lock.mdb aside (NAME.damaged-STAMP-PID, kept for a
 * bug report) and opens a fresh store; a read-only or no_create open leaves them and is absent
 * (empty). Either way fcc_damage says what happened, and the open's warning carries it (damage
 * found later is said once on stderr). A full disk (ENOSPC, EDQUOT, a short write) fails a put
 * with a message that says so, once on stderr too; evicting entries this process used (a cap
 * too small for its kernels) is said once on stderr.
 *
 * Compiling once. fcc_lock_key / fcc_unlock_key: a per-key flock on DIR/locks/KEY.lock that a
 * compiler takes on a miss, then looks the key up again (docs/ARCHITECTURE.md says why not
 * LMDB's write transaction).
 *
 * Processes and threads. LMDB transactions make concurrent use by many processes safe; every
 * put is one transaction. Within a process every call on a store is serialised by the store's
 * mutex, so one store may be shared by threads (the environment is opened with MDB_NOTLS and
 * no transaction outlives a call). LMDB forbids opening one environment twice in a process, so
 * fcc_open of a path that is already open returns the same store with its reference count
 * raised; the options of the first open apply. A store must not be used across fork(): a
 * child opens its own (fcc_open in a child ignores the parent's stores). Stale reader slots of
 * killed processes are cleared (mdb_reader_check) at open and before eviction; a writer killed
 * mid-transaction leaves the last committed state (LMDB's robust mutex and copy-on-write).
 *
 * Memory. LMDB allocates for itself with malloc; this module uses plain malloc/free too (it has
 * no context: one store serves all contexts of a process) and frees everything on every path.
 *
 * FUSEC_REQUIRE_CACHED. "" or "0" (or unset) means off; any other value turns it on. The cache
 * itself still reports a miss as found == false; the caller checks fcc_require_cached() and
 * fails instead of compiling (fcc_explain_miss can say why it missed).
 *
 * Errors are fc_status values; the message of the last failed call is in fcc_errmsg(). A bad
 * entry, an unusable directory or a failed disk write never makes a lookup fail.
 */
#ifndef FUSEC_CACHE_H
#define FUSEC_CACHE_H

#include "fusec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Version of the key's serialisation; bump when fcc_key_compute changes. */
#define FCC_KEY_FORMAT_VERSION 1u
/** Version of the stored value's layout (written; format 1 is still read). */
#define FCC_ENTRY_FORMAT_VERSION 2u
/** Size of a stored value's header (the payload follows it). */
#define FCC_ENTRY_HEADER_SIZE 32u
/** Version of the fcc_export file format. */
#define FCC_EXPORT_FORMAT_VERSION 2u

/** Names of the two LMDB databases inside the environment (tests write them raw). */
#define FCC_DB_ENTRIES "entries"
#define FCC_DB_LRU "lru"

/** Defaults of fcc_options. */
#define FCC_DEFAULT_INITIAL_MAP_SIZE (32ull << 20)
#define FCC_DEFAULT_MAX_MAP_SIZE (2ull << 30)
#define FCC_DEFAULT_TOUCH_INTERVAL_US 60000000ull
/** The least $FUSEC_CACHE_MAX taken (a smaller one is raised to it, with a warning). */
#define FCC_MIN_MAX_MAP_SIZE (1ull << 20)

/** A cache key: XXH3-128 in canonical (big-endian) byte order; also the LMDB key. */
typedef struct fcc_key {
    uint8_t bytes[16];
} fcc_key;

/** Everything that affects a compiled kernel. Strings are NUL-terminated and borrowed. */
typedef struct fcc_key_fields {
    uint32_t codegen_version; /**< codegen's own version: bump when its output changes */
    const char *source;       /**< canonical CUDA source, source_len bytes */
    size_t source_len;
    const char *options;      /**< NVRTC options, joined canonically with single spaces ("") */
    const char *arch;         /**< target, e.g. "sm_90" or "sm_90a" (non-empty) */
    uint32_t nvrtc_version;   /**< major * 1000 + minor * 10, as CUDA_VERSION (12.4 = 12040) */
    const char *kernel_name;  /**< the __global__ function's name (non-empty) */
} fcc_key_fields;

/** The key fields, in key order; an index into fcc_entry_info.field_hash and a bit of
 *  fcc_explanation.differ (1u << field). */
typedef enum fcc_field {
    FCC_FIELD_KEY_FORMAT,
    FCC_FIELD_CODEGEN,
    FCC_FIELD_SOURCE,
    FCC_FIELD_OPTIONS,
    FCC_FIELD_ARCH,
    FCC_FIELD_NVRTC,
    FCC_FIELD_KERNEL_NAME,
    FCC_FIELD_COUNT
} fcc_field;

/** Why a stored value is unusable. */
typedef enum fcc_problem {
    FCC_PROBLEM_NONE,
    FCC_PROBLEM_TRUNCATED, /**< shorter (or longer) than its header says */
    FCC_PROBLEM_MAGIC,     /**< not an entry */
    FCC_PROBLEM_VERSION,   /**< an entry format this build does not read */
    FCC_PROBLEM_CHECKSUM,  /**< payload does not match its XXH3-64 */
    FCC_PROBLEM_LAYOUT,    /**< checksum fine, but lengths or strings inconsistent */
    FCC_PROBLEM_KEY,       /**< stored under a key other than its own */
    FCC_PROBLEM_NAME,      /**< kernel name not an identifier, arch not like sm_90a, or
                                options not printable ASCII */
    FCC_PROBLEM_FIELDS     /**< the per-field hashes are not those of the stored fields (or
                                another key format): the metadata was edited */
} fcc_problem;

/** Options of fcc_open; start from fcc_options_default(). */
typedef struct fcc_options {
    const char *dir;            /**< NULL: from the environment (see above); copied */
    uint64_t initial_map_size;  /**< bytes; 0: default (at least 64 KiB, page-rounded) */
    uint64_t max_map_size;      /**< the cap, bytes; 0: $FUSEC_CACHE_MAX ("512M", "2G", bytes)
                                     or the default */
    uint64_t touch_interval_us; /**< least time between last-used updates of one entry */
    int require_cached;         /**< -1: from $FUSEC_REQUIRE_CACHED; 0 off; 1 on */
    bool read_only;             /**< open the store read-only (puts stay in memory); implies
                                     no_create */
    bool no_create;             /**< a store not on disk yet is absent (empty), not created */
    bool memory_only;           /**< no disk at all (no warning) */
} fcc_options;

/** A cached kernel. Pointers are into memory the store owns; they stay valid until the store's
 *  last fcc_close, even if the entry is later overwritten, evicted or cleared. cubin is
 *  16-byte aligned. */
typedef struct fcc_entry {
    const void *cubin;
    size_t cubin_size;
    const void *meta;
    size_t meta_size;
    const char *kernel_name;
    const char *summary;   /**< what it computes; "" for entry format 1 */
} fcc_entry;

/** One stored entry as fcc_list / fcc_explain_miss see it. Strings point into the store and are
 *  valid only during the callback (or, in an fcc_explanation, until fcc_explanation_free).
 *  When problem != FCC_PROBLEM_NONE only key, value_size and last_used_us are meaningful and
 *  the strings are "". */
typedef struct fcc_entry_info {
    fcc_key key;
    fcc_problem problem;
    uint64_t value_size;   /**< bytes of the stored value, header included (0 in an
                                fcc_explanation) */
    uint64_t last_used_us; /**< 0: never stamped */
    uint64_t created_us;
    uint64_t cubin_size, meta_size, source_len;
    uint32_t key_format, codegen_version, nvrtc_version;
    uint64_t field_hash[FCC_FIELD_COUNT]; /**< XXH3-64 of each key field */
    const char *kernel_name, *arch, *options;
    const char *summary;   /**< "" for entry format 1 (and in fcc_explanation.wanted) */
} fcc_entry_info;

typedef struct fcc_stats {
    bool persistent;       /**< an LMDB store is in use */
    bool read_only;
    uint64_t entries;      /**< entries on disk (bad ones included) */
    uint64_t bytes;        /**< sum of their value sizes */
    uint64_t map_size;     /**< current LMDB map size */
    uint64_t map_used;     /**< bytes up to LMDB's last used page (free pages included) */
    uint64_t map_cap;      /**< max_map_size */
    uint64_t memory_entries; /**< entries in the in-process map */
    /* this process, since the store was opened: */
    uint64_t memory_hits, disk_hits, misses;
    uint64_t bad_entries;  /**< lookups that found an unusable entry (counted as misses too) */
    uint64_t puts, put_failures, grows, evictions;
    uint64_t evicted_own; /**< evicted entries this process had used: the cap is too small
                               (said once on stderr) */
} fcc_stats;

typedef struct fcc_verify_result {
    uint64_t checked;      /**< entries walked */
    uint64_t bad;          /**< unusable entries found */
    uint64_t deleted;      /**< of which deleted (delete_bad) */
    uint64_t orphan_stamps; /**< last-used stamps without an entry (deleted with delete_bad) */
} fcc_verify_result;

/** What fcc_explain_miss found. */
typedef struct fcc_explanation {
    uint64_t entries_seen;
    bool exact;              /**< an entry with this very key exists ... */
    fcc_problem exact_problem; /**< ... and this is why it was not used (NONE: it is usable) */
    bool found;              /**< a nearest usable entry exists */
    unsigned differ;         /**< bits (1u << fcc_field) where nearest differs from wanted */
    fcc_entry_info wanted;   /**< the fields that missed (sizes and times zero) */
    fcc_entry_info nearest;  /**< valid when found */
} fcc_explanation;

typedef struct fcc_cache fcc_cache;

/** Default options (all zero but touch_interval_us and require_cached = -1). */
fcc_options fcc_options_default(void);

/** Opens (or shares) the store for the directory that opts (NULL: defaults) names.
 *  @param[out] out the store; release with fcc_close. NULL on failure.
 *  @return FC_OK, also when the directory is unusable (memory only; see fcc_take_warning)
 *          and when $FUSEC_CACHE_MAX is not a size (the default is used, with a warning);
 *          FC_ERR_NULL (out NULL); FC_ERR_INVALID (max_map_size below initial_map_size, or
 *          require_cached outside -1..1); FC_ERR_NOMEM. */
fc_status fcc_open(const fcc_options *opts, fcc_cache **out);

/** Drops a reference; the last one writes pending last-used stamps, closes the environment and
 *  frees the store with every fcc_entry it handed out. NULL is ignored. */
void fcc_close(fcc_cache *cache);

/** The directory in use (resolved), or NULL for a memory-only store without one. */
const char *fcc_dir(const fcc_cache *cache);
/** Whether an LMDB store is in use (false: in-process map only). */
bool fcc_is_persistent(const fcc_cache *cache);
/** Whether no store exists on disk and this open did not create one (read_only or no_create):
 *  the cache is empty. Not persistent, but no fault either (no warning). */
bool fcc_is_absent(const fcc_cache *cache);
/** Whether the LMDB store is read-only (puts stay in memory). */
bool fcc_is_read_only(const fcc_cache *cache);
/** Whether FUSEC_REQUIRE_CACHED (or the option) is on: a miss must then be an error. */
bool fcc_require_cached(const fcc_cache *cache);
/** The warning of fcc_open (fallback to memory, or read-only), the first time it is asked for
 *  on this store; NULL afterwards and when there is none. Owned by the store. */
const char *fcc_take_warning(fcc_cache *cache);
/** What damage was found in the store's files (at open, or when LMDB reported it later) and
 *  what became of them ("... moved it aside to DIR/data.mdb.damaged-STAMP ..."), or NULL when
 *  none was. Owned by the store. */
const char *fcc_damage(const fcc_cache *c);
/** The message of the last failed call on this store ("" if none). Owned by the store; another
 *  call (from any thread) may overwrite it. */
const char *fcc_errmsg(const fcc_cache *cache);

/** Computes the key of fields. @return FC_OK; FC_ERR_NULL (a NULL pointer among fields or
 *  out); FC_ERR_INVALID (empty arch or kernel name). */
fc_status fcc_key_compute(const fcc_key_fields *fields, fcc_key *out);
/** Writes key as 32 lower-case hex digits and a NUL. */
void fcc_key_to_hex(const fcc_key *key, char out[33]);
/** Parses 32 hex digits (either case). @return FC_OK or FC_ERR_INVALID. */
fc_status fcc_key_from_hex(const char *hex, fcc_key *out);
/** Name of a key field ("key-format", "codegen", "source", "options", "arch", "nvrtc",
 *  "kernel"), or "?". */
const char *fcc_field_name(int field);
/** A few words for a problem ("ok", "truncated", "bad magic", ...). */
const char *fcc_problem_name(fcc_problem problem);

/** Checks and decodes one stored value (header and payload, as LMDB or an export holds it):
 *  magic, version, sizes, checksum, layout, names, the stored key against want_key (NULL:
 *  not checked) and the per-field hashes. The check every lookup, list, verify and import
 *  makes, reachable alone for tests and fuzz/fuzz_cache_value.c.
 *  @param[out] out (may be NULL) filled as fcc_list fills it; its strings point into value.
 *  @return FCC_PROBLEM_NONE for a usable value, else why it is not. */
fcc_problem fcc_decode_value(const void *value, size_t len, const fcc_key *want_key,
                             fcc_entry_info *out);

/** Looks key up: the in-process map, then the disk. A bad entry on disk is a miss.
 *  @param[out] out filled when found (see fcc_entry for lifetime); may be NULL.
 *  @param[out] found whether it was found.
 *  @return FC_OK (hit or miss); FC_ERR_NULL; FC_ERR_NOMEM (copying a found entry). A disk error
 *          is reported as a miss, never as an error. */
fc_status fcc_get(fcc_cache *cache, const fcc_key *key, fcc_entry *out, bool *found);

/** Stores a kernel under the key of fields, in the in-process map and on disk (overwriting
 *  any entry with that key, bad or good). Bytes are copied; cubin may be NULL only when
 *  cubin_size is 0, likewise meta. summary (NULL: "") describes the kernel for listings, at
 *  most 4096 bytes; it does not enter the key. Writes pending last-used stamps in the same
 *  transaction.
 *  @return FC_OK; FC_ERR_NULL / FC_ERR_INVALID (bad fields, summary too long); FC_ERR_NOMEM;
 *          FC_ERR_IO when the disk write failed or the value exceeds half the cap: the kernel
 *          is still in the in-process map, so a caller may ignore this error. Memory-only,
 *          absent and read-only stores return FC_OK after the in-memory put. */
fc_status fcc_put(fcc_cache *cache, const fcc_key_fields *fields, const char *summary,
                  const void *cubin, size_t cubin_size, const void *meta, size_t meta_size);

/** Takes the cross-process lock of key before compiling it, waiting at most wait_ms for
 *  another process that holds it (a crashed holder's lock goes with it). Then look the key
 *  up again: the holder may have stored it. *handle is -1 when nothing was locked (no
 *  writable disk store, or the wait ran out): compile anyway.
 *  @return FC_OK; FC_ERR_NULL; FC_ERR_NOMEM. */
fc_status fcc_lock_key(fcc_cache *cache, const fcc_key *key, unsigned wait_ms, int *handle);
/** Releases a lock of fcc_lock_key (handle -1: nothing). */
void fcc_unlock_key(fcc_cache *cache, const fcc_key *key, int handle);

/** Writes pending last-used stamps now. @return FC_OK or FC_ERR_IO. */
fc_status fcc_flush(fcc_cache *cache);

/** Fills *out. Walks the disk store for entries and bytes. @return FC_OK, FC_ERR_NULL, or
 *  FC_ERR_IO (the disk store could not be read; the process counters are still filled). */
fc_status fcc_get_stats(fcc_cache *cache, fcc_stats *out);

/** Calls fn once per entry on disk, in key order (bad entries included, with their problem).
 *  fn returns 0 to go on, anything else to stop. fn must not call fcc_ functions on this
 *  store (the store's mutex is held). @return FC_OK; FC_ERR_NULL; FC_ERR_IO (no disk store,
 *  or a read error). */
fc_status fcc_list(fcc_cache *cache, int (*fn)(const fcc_entry_info *info, void *user),
                   void *user);

/** Checks every entry on disk (header, checksum, layout, stored key) and every last-used stamp.
 *  report (may be NULL) is called for each bad entry, after the walk, outside any transaction
 *  but with the store's mutex held (same rule as fcc_list). With delete_bad the bad entries and
 *  orphan stamps are deleted (each re-checked in the deleting transaction, so an entry another
 *  process has just rewritten survives). The status does not count bad entries: the caller
 *  decides the exit status from *out (nonzero bad: failure).
 *  @return FC_OK; FC_ERR_NULL; FC_ERR_IO (no disk store, read-only with delete_bad, an LMDB
 *          error); FC_ERR_NOMEM. */
fc_status fcc_verify(fcc_cache *cache, bool delete_bad,
                     void (*report)(const fcc_key *key, fcc_problem problem, void *user),
                     void *user, fcc_verify_result *out);

/** Deletes every entry and stamp on disk and empties the in-process map (entries handed out
 *  stay valid until close). Hit and miss counters are kept. @return FC_OK; FC_ERR_NULL;
 *  FC_ERR_IO (read-only, or an LMDB error). A memory-only store just empties its map. */
fc_status fcc_clear(fcc_cache *cache);

/** Writes every good entry on disk to path, atomically (a temporary file renamed into place).
 *  The format (2; little-endian): "FUSECEXP", u32 FCC_EXPORT_FORMAT_VERSION, u32 flags (1:
 *  signed), u32 header text length L, u32 0, then L bytes of text saying what the export holds,
 *  one "name: values" line each, values separated by spaces:
 *      archs: sm_80 sm_90\nnvrtc: 12040\ncodegen: 7\nkey-format: 1\nentries: N\n
 *  per entry u32 0x52544E45 ("ENTR"), u32 0, key[16], u64 last_used_us, u64 value size, the
 *  stored value (header included, so each value keeps its own checksum); then u32 0x00444E45
 *  ("END"), u32 0, u64 entry count, u64 XXH3-64 of every byte before this one; a signed
 *  export ends with the HMAC-SHA256, under the key, of every byte before it.
 *  @param[out] count entries written (may be NULL). @return FC_OK; FC_ERR_NULL; FC_ERR_IO (no
 *          disk store, or a write error: no file is left behind); FC_ERR_INVALID (entries of
 *          more than 32 archs or versions); FC_ERR_NOMEM. */
fc_status fcc_export(fcc_cache *c, const char *path, uint64_t *count);
/** fcc_export, signed with key (key_len bytes; NULL: not signed). */
fc_status fcc_export_signed(fcc_cache *c, const char *path, const void *key, size_t key_len,
                            uint64_t *count);

/** Reads a file written by fcc_export (format 1 or 2): first checks all of it (structure, each
 *  value's header, checksum, stored key, kernel name, and that its per-field hashes are those
 *  of its stored fields; that each entry is of an arch and versions the header lists; the
 *  count and the file checksum), then stores its entries (overwriting those with the same
 *  key; last-used stamps as exported). Nothing is stored from a file that fails the check,
 *  and the store pass stores an entry only if its SHA-256 is the one the check saw. Refuses a
 *  path that is not a regular file (a FIFO never blocks it). @param[out] count entries
 *  imported (may be NULL).
 *  @return FC_OK; FC_ERR_NULL; FC_ERR_IO (cannot read, not a regular file, no writable disk
 *          store, a disk write failed); FC_ERR_PARSE (the file is malformed, corrupt, or its
 *          signature is wrong, missing or unexpected); FC_ERR_NOMEM. */
fc_status fcc_import(fcc_cache *c, const char *path, uint64_t *count);
/** fcc_import checking the signature with key (NULL: the export must not be signed; given: it
 *  must be, with this key). holds (may be NULL) gets one line saying what the file holds. */
fc_status fcc_import_signed(fcc_cache *c, const char *path, const void *key, size_t key_len,
                            uint64_t *count, char *holds, size_t holds_size);

/** Explains a miss of fields: finds the entry with this very key (reporting its problem), or
 *  else the nearest one: the same kernel name and source first, then the most key fields in
 *  common, then the most recently used. Searches the disk store, or the in-process map of a
 *  memory-only store. @param[out] out free with fcc_explanation_free.
 *  @return FC_OK (also when nothing is near: found false); FC_ERR_NULL; FC_ERR_INVALID (bad
 *          fields); FC_ERR_NOMEM; FC_ERR_IO (a read error). */
fc_status fcc_explain_miss(fcc_cache *cache, const fcc_key_fields *fields,
                           fcc_explanation **out);
void fcc_explanation_free(fcc_explanation *ex);
/** Writes a readable account of ex into buf (truncated to size, always NUL-terminated when
 *  size > 0): which fields differ, with both values where they are small. @return the length
 *  the whole text needs, as snprintf. */
size_t fcc_explanation_format(const fcc_explanation *ex, char *buf, size_t size);

/** Writes one `fusec cache list` line for info (no newline): key hex, arch, value size, last
 *  use (UTC, or "never") and the summary ("kernel NAME" when it has none), or the problem of
 *  a bad entry. Bytes outside printable ASCII, and backslashes, show escaped (\\n, \\xNN,
 *  \\\\). @return as snprintf. */
size_t fcc_format_list_line(const fcc_entry_info *info, char *buf, size_t size);

#endif /* FUSEC_CACHE_H */
