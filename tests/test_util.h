/*
 * tests/test_util.h - small helpers several tests share, as static inline functions (C11 and
 * C++17): a host-backend context, whether a GPU is there, a whole file read into memory, what
 * a piece of code wrote to stderr, and the check of a malformed .fc program's error. They assert (Criterion).
 */
#ifndef FUSEC_TESTS_TEST_UTIL_H
#define FUSEC_TESTS_TEST_UTIL_H

#include <criterion/criterion.h>

#include <fusec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A context on the host backend that allocates through alloc (NULL: the default allocator). */
static inline fc_ctx *tu_host_ctx_with(const fc_allocator *alloc) {
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_HOST;
    o.allocator = alloc;
    fc_ctx *ctx = NULL;
    cr_assert_eq(fc_ctx_create(&ctx, &o), FC_OK);
    return ctx;
}

static inline fc_ctx *tu_host_ctx(void) { return tu_host_ctx_with(NULL); }

/* Opens tests/data/NAME for reading; the test fails if it cannot. */
static inline FILE *tu_open_data(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", FUSEC_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    return f;
}

/* Whether a CUDA context can be made here (a GPU and its driver). */
static inline bool tu_gpu_available(void) {
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    fc_ctx *c;
    if (fc_ctx_create(&c, &o) != FC_OK) return false;
    fc_ctx_destroy(c);
    return true;
}

/* A GPU test's two contexts: *host on the host backend and *gpu on the CUDA one; both NULL
 * where there is no GPU. tu_gpu_pair_close destroys what was made. */
static inline void tu_gpu_pair_open(fc_ctx **host, fc_ctx **gpu) {
    *host = *gpu = NULL;
    if (!tu_gpu_available()) return;
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = FC_BACKEND_CUDA;
    *host = tu_host_ctx();
    cr_assert_eq(fc_ctx_create(gpu, &o), FC_OK, "the CUDA context");
}

/* Skips a GPU test where the pair has no GPU, visibly: a line on stderr names the suite and
 * the test, so a run without a GPU says how many it skipped. */
#define TU_SKIP_WITHOUT_GPU(gpu, suite, name)                                                   \
    do {                                                                                         \
        if (!(gpu)) {                                                                            \
            fprintf(stderr, "%s: SKIPPED 1 test (no CUDA device): %s\n", suite, name);          \
            cr_skip_test("no CUDA device: the %s test is skipped", suite);                      \
        }                                                                                        \
    } while (0)

static inline void tu_gpu_pair_close(fc_ctx **host, fc_ctx **gpu) {
    if (*gpu) fc_ctx_destroy(*gpu);
    if (*host) fc_ctx_destroy(*host);
    *host = *gpu = NULL;
}

/* A context on `backend` whose kernel cache is a new temporary directory, named in dir (at
 * least 40 bytes); tu_remove_dir removes it afterwards. NULL when the backend is not there. */
static inline fc_ctx *tu_ctx_with_cache(fc_backend backend, char *dir, size_t size) {
    snprintf(dir, size, "/tmp/fusec-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    fc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.backend = backend;
    o.cache_dir = dir;
    fc_ctx *ctx = NULL;
    return fc_ctx_create(&ctx, &o) == FC_OK ? ctx : NULL;
}

static inline void tu_remove_dir(const char *dir) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0, "%s", cmd);
}

/* The file at path, NUL-terminated (malloc'd); its length (without the NUL) in *len. */
static inline char *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = (char *)malloc((size_t)n + 1);
    cr_assert(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* stderr of the code between tu_stderr_begin and tu_stderr_end, as a malloc'd string: the
 * begin call sends file descriptor 2 to a temporary file and returns the saved descriptor. */
static inline int tu_stderr_begin(FILE **file) {
    fflush(stderr);
    *file = tmpfile();
    cr_assert_not_null(*file);
    int saved = dup(2);
    cr_assert(saved >= 0 && dup2(fileno(*file), 2) >= 0);
    return saved;
}
static inline char *tu_stderr_end(FILE *file, int saved) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fseek(file, 0, SEEK_END); /* written through the descriptor, not the stream */
    long n = ftell(file);
    rewind(file);
    char *text = (char *)malloc((size_t)(n > 0 ? n : 0) + 1);
    cr_assert(text);
    size_t got = n > 0 ? fread(text, 1, (size_t)n, file) : 0;
    text[got] = '\0';
    fclose(file);
    return text;
}

/* text[0..len), a malformed .fc program named "bad.fc", fails with status: at parsing, or (for
 * a status other than FC_ERR_PARSE) at building; either way the message starts
 * "bad.fc:LINE:COL: " and contains says. */
static inline void tu_check_bad_fc(const char *text, size_t len, fc_status status, int line,
                                   int col, const char *says) {
    fc_ctx *ctx = tu_host_ctx();
    fc_program *p = NULL;
    fc_status st = fc_program_parse(ctx, text, len, "bad.fc", &p);
    if (st == FC_OK) {
        cr_assert_neq(status, FC_ERR_PARSE, "parsed, but should not:\n%s", text);
        fc_scope *s = fc_scope_open(ctx);
        fc_array *outs[4];
        st = fc_program_build(p, NULL, outs);
        fc_scope_close(s);
        fc_program_destroy(p);
    } else {
        cr_assert_null(p);
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "bad.fc:%d:%d: ", line, col);
    const char *msg = fc_errmsg(ctx);
    cr_assert_eq(st, status, "status %d (%s), want %d, for:\n%s", st, msg, status, text);
    cr_assert(strncmp(msg, prefix, strlen(prefix)) == 0, "message '%s' should start '%s', for:\n%s",
              msg, prefix, text);
    cr_assert(strstr(msg, says), "message '%s' should say '%s'", msg, says);
    fc_ctx_destroy(ctx);
}

#endif /* FUSEC_TESTS_TEST_UTIL_H */
