/*
 * fuzz/fuzz_util.h - what the libFuzzer targets share: a finding (fz_fail), a memory file
 * whose path the loaders can open (fz_memfile), and a private temporary directory that is
 * removed at exit (fz_tempdir). Header-only: each target is one translation unit.
 *
 * fz_fail prints what was wrong and aborts: libFuzzer then saves the input as a crash file,
 * exactly as it does for a sanitizer report. Use it for a broken promise of the library
 * (a print that does not parse back, an error without a message), never for bad input.
 */
#ifndef FUSEC_FUZZ_UTIL_H
#define FUSEC_FUZZ_UTIL_H

/* Needs _GNU_SOURCE (memfd_create, nftw): fuzz/CMakeLists.txt defines it. */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noreturn, format(printf, 1, 2))) static void fz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz finding: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* A file in memory (memfd) holding the last bytes given; *path names it for fopen/open. */
typedef struct fz_memfile {
    int fd;
    char path[64];
} fz_memfile;

static inline void fz_memfile_init(fz_memfile *m, const char *name) {
    m->fd = memfd_create(name, MFD_CLOEXEC);
    if (m->fd < 0) {
        perror("fuzz: memfd_create");
        exit(1);
    }
    snprintf(m->path, sizeof m->path, "/proc/self/fd/%d", m->fd);
}

/* Replaces the file's contents with data[0..size). */
static inline void fz_memfile_set(fz_memfile *m, const void *data, size_t size) {
    if (ftruncate(m->fd, 0) != 0) fz_fail("ftruncate: %s", strerror(errno));
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(m->fd, (const char *)data + done, size - done, (off_t)done);
        if (n <= 0) fz_fail("pwrite: %s", strerror(errno));
        done += (size_t)n;
    }
}

static char fz_tempdir_path[4096];

static inline int fz_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static inline void fz_tempdir_remove(void) {
    if (fz_tempdir_path[0]) nftw(fz_tempdir_path, fz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new empty directory (under /dev/shm when there is one, else $TMPDIR or /tmp), removed
 * with everything in it when the process exits normally. One per process. */
static inline const char *fz_tempdir(void) {
    if (fz_tempdir_path[0]) return fz_tempdir_path;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    snprintf(fz_tempdir_path, sizeof fz_tempdir_path, "%s/fusec-fuzz-XXXXXX", base);
    if (!mkdtemp(fz_tempdir_path)) {
        perror("fuzz: mkdtemp");
        exit(1);
    }
    atexit(fz_tempdir_remove);
    return fz_tempdir_path;
}

/* Whether s[0..n) is printable ASCII (what fusec promises to print to a terminal). */
static inline int fz_printable(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) return 0;
    return 1;
}

#endif /* FUSEC_FUZZ_UTIL_H */
