/*
 * tools/cmd_cache.c - fusec cache: look after the on-disk kernel cache (stats, list, verify,
 * clear, export, import).
 */
#include "cli.h"
#include "plan_entry.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static const char usage_cache[] =
    "usage: fusec cache stats|list|verify|clear|export|import [options] [--cache-dir DIR]\n"
    "\n"
    "  fusec cache stats                 where the cache is, its entries, bytes and map size\n"
    "  fusec cache list                  one line per entry: key, arch, size, last use, and what\n"
    "                                    the kernel computes (a bad entry shows its problem)\n"
    "  fusec cache verify [--delete-bad] checks every entry's header, checksum, layout and\n"
    "                                    key; --delete-bad deletes the bad ones (a later run\n"
    "                                    recompiles them)\n"
    "  fusec cache clear                 deletes every entry\n"
    "  fusec cache export [--key KEYFILE] FILE\n"
    "                                    writes every good entry to FILE (atomically); its\n"
    "                                    header says what it holds; --key signs it\n"
    "                                    (HMAC-SHA256 with the bytes of KEYFILE)\n"
    "  fusec cache import [--key KEYFILE] FILE\n"
    "                                    checks all of FILE (each entry against its key and\n"
    "                                    the header; with --key the signature, which must be\n"
    "                                    there), then stores its entries\n"
    "\n"
    "The cache is --cache-dir DIR, else $FUSEC_CACHE_DIR, else $XDG_CACHE_HOME/fusec, else\n"
    "~/.cache/fusec. stats, list, verify and export open it read-only. Only import creates\n"
    "it: where nothing is stored yet, the other commands find an empty cache (exit 0).\n"
    "A damaged cache file (truncated, overwritten, not LMDB's) is moved aside as\n"
    "data.mdb.damaged-STAMP by the commands that write (clear, verify --delete-bad, import);\n"
    "stats, list, verify and export leave it and report it.\n"
    "Exit codes: 0 ok, 1 usage, 4 the cache or FILE cannot be read or written, 6 verify found\n"
    "bad entries (that --delete-bad did not delete) or damaged files, FILE is not a valid\n"
    "export or its signature does not match.\n";

/* Opens the store; a store that is not on disk (unusable directory) is an error here. A cache
 * that does not exist yet is not: it is empty, and only a command that stores something
 * (create) makes it. Looking at, clearing or exporting nothing must not leave a directory
 * behind (a mistyped --cache-dir, or a root shell on a fresh machine). */
static int open_store(const cli_opts *o, bool read_only, bool create, fcc_cache **out) {
    fcc_options co = fcc_options_default();
    co.dir = o->cache_dir;
    co.read_only = read_only;
    co.no_create = !create;
    co.require_cached = 0;
    fc_status st = fcc_open(&co, out);
    if (st != FC_OK) {
        cli_error("cannot open the kernel cache: %s", fc_strerror(st));
        return st == FC_ERR_NOMEM ? EXIT_PROGRAM : EXIT_IO;
    }
    const char *w = fcc_take_warning(*out);
    if (fcc_is_absent(*out)) {
        if (w) cli_warn("%s", w); /* e.g. a bad $FUSEC_CACHE_MAX, or damaged files left alone */
        if (!fcc_damage(*out))
            fprintf(stderr, "fusec: the kernel cache in %s is empty (nothing is stored there "
                            "yet)\n", fcc_dir(*out));
        return EXIT_OK;
    }
    if (!fcc_is_persistent(*out)) {
        cli_error("%s", w ? w : "the kernel cache has no directory");
        fcc_close(*out);
        *out = NULL;
        return EXIT_IO;
    }
    if (!read_only && fcc_is_read_only(*out)) {
        cli_error("%s", w ? w : "the kernel cache is read-only");
        fcc_close(*out);
        *out = NULL;
        return EXIT_IO;
    }
    if (w) cli_warn("%s", w);
    return EXIT_OK;
}

static void human(uint64_t bytes, char *buf, size_t size) {
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    if (u == 0) snprintf(buf, size, "%" PRIu64 " B", bytes);
    else snprintf(buf, size, "%.1f %s", v, unit[u]);
}

static int count_plan_entry(const fcc_entry_info *info, void *user) {
    if (info->problem == FCC_PROBLEM_NONE && strcmp(info->kernel_name, FCK_PLAN_ENTRY_NAME) == 0)
        ++*(uint64_t *)user;
    return 0;
}

static int cache_stats(fcc_cache *c) {
    fcc_stats s;
    if (fcc_get_stats(c, &s) != FC_OK) {
        cli_error("cache stats: %s", fcc_errmsg(c));
        return EXIT_IO;
    }
    char b[32], used[32], size[32], cap[32];
    human(s.bytes, b, sizeof b);
    human(s.map_used, used, sizeof used);
    human(s.map_size, size, sizeof size);
    human(s.map_cap, cap, sizeof cap);
    printf("directory: %s\n", fcc_dir(c));
    /* Plan entries (compile/plan_entry.h) are entries too: they name a program's kernels. */
    uint64_t plans = 0;
    if (!fcc_is_absent(c) && fcc_is_persistent(c)) fcc_list(c, count_plan_entry, &plans);
    printf("entries: %" PRIu64 " (%" PRIu64 " kernels, %" PRIu64 " plan entries)\n", s.entries,
           s.entries - plans, plans);
    printf("bytes: %" PRIu64 " (%s)\n", s.bytes, b);
    if (fcc_is_absent(c)) printf("map: none yet (cap %s)\n", cap);
    else printf("map: %s used of %s (cap %s)\n", used, size, cap);
    return EXIT_OK;
}

static int list_line(const fcc_entry_info *info, void *user) {
    char line[1024];
    fcc_format_list_line(info, line, sizeof line);
    puts(line);
    ++*(uint64_t *)user;
    return 0;
}

static int cache_list(fcc_cache *c) {
    uint64_t n = 0;
    if (fcc_list(c, list_line, &n) != FC_OK) {
        cli_error("cache list: %s", fcc_errmsg(c));
        return EXIT_IO;
    }
    /* stdout stays one line per entry; the note is for a person (an absent store had its
     * note at open). */
    if (n == 0 && !fcc_is_absent(c))
        fprintf(stderr, "fusec: the kernel cache in %s is empty\n", fcc_dir(c));
    return EXIT_OK;
}

static void report_bad(const fcc_key *key, fcc_problem problem, void *user) {
    (void)user;
    char hex[33];
    fcc_key_to_hex(key, hex);
    printf("bad %s: %s\n", hex, fcc_problem_name(problem));
}

/* Damaged files (found at open or while reading): a read-only command left them as they are
 * and saw an empty cache; a writing one moved them aside. The warning said which. */
static int damaged(fcc_cache *c, const char *cmd, bool moved) {
    if (!fcc_damage(c)) return EXIT_OK;
    if (moved) return EXIT_OK;
    cli_error("%s: the kernel cache files in %s are damaged (see above); `fusec cache clear` or "
              "`fusec cache verify --delete-bad` moves them aside", cmd, fcc_dir(c));
    return EXIT_BAD_CACHE;
}

static int cache_verify(fcc_cache *c, bool delete_bad) {
    fcc_verify_result r;
    if (fcc_verify(c, delete_bad, report_bad, NULL, &r) != FC_OK) {
        cli_error("cache verify: %s", fcc_errmsg(c));
        return fcc_damage(c) ? EXIT_BAD_CACHE : EXIT_IO;
    }
    int rc = damaged(c, "cache verify", delete_bad);
    if (rc) {
        printf("checked: %" PRIu64 "\nbad: file damaged\n", r.checked);
        return rc;
    }
    printf("checked: %" PRIu64 "\nbad: %" PRIu64 "\n", r.checked, r.bad);
    if (delete_bad) printf("deleted: %" PRIu64 "\norphan stamps deleted: %" PRIu64 "\n", r.deleted,
                           r.orphan_stamps);
    if (r.bad > r.deleted) {
        cli_error("cache verify: %" PRIu64 " bad entr%s in %s%s", r.bad - r.deleted,
                  r.bad - r.deleted == 1 ? "y" : "ies", fcc_dir(c),
                  delete_bad ? "" : " (fusec cache verify --delete-bad removes them)");
        return EXIT_BAD_CACHE;
    }
    return EXIT_OK;
}

static int cache_clear(fcc_cache *c) {
    fcc_stats s;
    uint64_t before = fcc_get_stats(c, &s) == FC_OK ? s.entries : 0;
    if (fcc_clear(c) != FC_OK) {
        cli_error("cache clear: %s", fcc_errmsg(c));
        return EXIT_IO;
    }
    printf("cleared: %" PRIu64 " entr%s from %s%s\n", before, before == 1 ? "y" : "ies", fcc_dir(c),
           fcc_damage(c) ? " (its damaged files were moved aside first)" : "");
    return EXIT_OK;
}

/* The key of --key FILE: its bytes (at least 16, at most 4096), in key[]. */
static int read_key(const char *file, uint8_t *key, size_t *len) {
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        cli_error("--key %s: %s", file, fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return EXIT_IO;
    }
    ssize_t n = read(fd, key, 4097);
    close(fd);
    if (n < 16 || n > 4096) {
        cli_error("--key %s: a key file holds 16 to 4096 bytes (for example `head -c 32 "
                  "/dev/urandom > %s`), this one %s", file, file,
                  n < 0 ? strerror(errno) : n < 16 ? "fewer" : "more");
        return EXIT_USAGE;
    }
    *len = (size_t)n;
    return EXIT_OK;
}

static int cache_export(fcc_cache *c, const char *file, const char *key_file) {
    uint64_t n = 0;
    int rc = damaged(c, "cache export", false);
    if (rc) return rc; /* an empty export of a damaged cache would look like a good one */
    uint8_t key[4097];
    size_t key_len = 0;
    if (key_file && (rc = read_key(key_file, key, &key_len))) return rc;
    fc_status st = fcc_export_signed(c, file, key_file ? key : NULL, key_len, &n);
    if (st != FC_OK) {
        cli_error("cache export to %s: %s", file,
                  *fcc_errmsg(c) ? fcc_errmsg(c) : fc_strerror(st));
        return st == FC_ERR_NOMEM ? EXIT_PROGRAM : EXIT_IO;
    }
    printf("exported: %" PRIu64 " entr%s to %s\n", n, n == 1 ? "y" : "ies", file);
    return EXIT_OK;
}

static int cache_import(fcc_cache *c, const char *file, const char *key_file) {
    uint64_t n = 0;
    uint8_t key[4097];
    size_t key_len = 0;
    int rc;
    if (key_file && (rc = read_key(key_file, key, &key_len))) return rc;
    char holds[512];
    fc_status st = fcc_import_signed(c, file, key_file ? key : NULL, key_len, &n, holds,
                                     sizeof holds);
    if (st != FC_OK) {
        cli_error("cache import from %s: %s", file,
                  *fcc_errmsg(c) ? fcc_errmsg(c) : fc_strerror(st));
        return st == FC_ERR_PARSE ? EXIT_BAD_CACHE : st == FC_ERR_NOMEM ? EXIT_PROGRAM : EXIT_IO;
    }
    printf("holds: %s\n", holds);
    printf("imported: %" PRIu64 " entr%s from %s\n", n, n == 1 ? "y" : "ies", file);
    return EXIT_OK;
}

typedef struct cache_sub {
    const char *name;
    unsigned opts;      /* extra options */
    bool needs_file;
    bool read_only;
} cache_sub;

static const cache_sub subs[] = {
    {"stats", 0, false, true},  {"list", 0, false, true},
    {"verify", OPT_DELETE_BAD, false, false}, {"clear", 0, false, false},
    {"export", OPT_KEY, true, true}, {"import", OPT_KEY, true, false},
};

int cmd_cache(int argc, char **argv) {
    if (argc == 0) {
        fputs(usage_cache, stderr);
        cli_error("cache: which? stats, list, verify, clear, export or import");
        return EXIT_USAGE;
    }
    if (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0) {
        fputs(usage_cache, stdout);
        return EXIT_OK;
    }
    const cache_sub *sub = NULL;
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(argv[0], subs[i].name) == 0) sub = &subs[i];
    if (!sub) {
        cli_error("cache: unknown subcommand '%s' (see fusec cache --help)", argv[0]);
        return EXIT_USAGE;
    }
    char cmd[32];
    snprintf(cmd, sizeof cmd, "cache %s", sub->name);
    cli_opts o;
    unsigned allowed = OPT_CACHE_DIR | sub->opts | (sub->needs_file ? 0 : OPT_NO_FILE);
    int rc = cli_parse(cmd, argc - 1, argv + 1, allowed, &o);
    if (rc || o.help) {
        rc = cli_usage(usage_cache, &o, rc);
        cli_opts_free(&o);
        return rc;
    }
    /* verify without --delete-bad only reads. */
    bool read_only = sub->read_only || (strcmp(sub->name, "verify") == 0 && !o.delete_bad);
    fcc_cache *c;
    if (!(rc = open_store(&o, read_only, strcmp(sub->name, "import") == 0, &c))) {
        if (strcmp(sub->name, "stats") == 0) rc = cache_stats(c);
        else if (strcmp(sub->name, "list") == 0) rc = cache_list(c);
        else if (strcmp(sub->name, "verify") == 0) rc = cache_verify(c, o.delete_bad);
        else if (strcmp(sub->name, "clear") == 0) rc = cache_clear(c);
        else if (strcmp(sub->name, "export") == 0) rc = cache_export(c, o.files[0], o.key_file);
        else rc = cache_import(c, o.files[0], o.key_file);
        fcc_close(c);
        if (fflush(stdout) != 0 && !rc) {
            cli_error("cannot write the output: %s", strerror(errno));
            rc = EXIT_IO;
        }
    }
    cli_opts_free(&o);
    return rc;
}
