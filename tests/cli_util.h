/*
 * tests/cli_util.h - running the fusec command-line tool of this build (FUSEC_BINARY_DIR
 * "/tools/fusec") from a test, as static inline functions (C11): a temporary directory of the
 * test's own, and runs of fusec in a child process whose stdout and stderr are captured to
 * files there and read back with its exit code. They assert (Criterion).
 *
 * Every run gets FUSEC_CACHE_DIR and FUSEC_REQUIRE_CACHED as its caller says (NULL: unset) and
 * FUSEC_TRACE and FUSEC_LOG unset: the settings of whoever runs the tests never reach it, and
 * it never touches the user's cache where its caller gives it one (cli_tmp's cache).
 *
 *     cli_tmp tmp;
 *     cli_tmp_make(&tmp, "fusec_my_test");
 *     cli_result r = cli_runl(&tmp, tmp.cache, NULL, "warm", "-q", path, NULL);
 *     cr_assert_eq(r.code, 0, "%s", r.err);
 *     cr_expect_eq(cli_field(r.out, "compiled"), 1, "%s", r.out);
 *     cli_result_free(&r);
 *     cli_tmp_remove(&tmp);
 */
#ifndef FUSEC_TESTS_CLI_UTIL_H
#define FUSEC_TESTS_CLI_UTIL_H

#include <criterion/criterion.h>

#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The fusec binary of this build. */
#define CLI_FUSEC FUSEC_BINARY_DIR "/tools/fusec"

/* The exit codes of a child that could not redirect its output, or not start fusec. */
enum { CLI_EXIT_REDIRECT = 120, CLI_EXIT_EXEC = 121 };

/* A test's temporary directory: cli_tmp_make creates it, cli_tmp_remove removes it with all it
 * holds. The captured outputs of the runs go there. */
typedef struct cli_tmp {
    char root[256];  /* the directory; "" when there is none */
    char cache[272]; /* root "/cache": a kernel cache of the test's own, for runs that want one */
    int runs;        /* runs started so far (they number the output files) */
} cli_tmp;

/* Creates /tmp/NAME_XXXXXX (a new directory) as t->root. */
static inline void cli_tmp_make(cli_tmp *t, const char *name) {
    memset(t, 0, sizeof *t);
    int n = snprintf(t->root, sizeof t->root, "/tmp/%s_XXXXXX", name);
    cr_assert(n > 0 && (size_t)n < sizeof t->root, "name too long: %s", name);
    cr_assert_not_null(mkdtemp(t->root), "cannot create %s: %s", t->root, strerror(errno));
    snprintf(t->cache, sizeof t->cache, "%s/cache", t->root);
}

/* Removes t->root and what it holds, if there is one. */
static inline void cli_tmp_remove(cli_tmp *t) {
    if (t->root[0]) tu_remove_dir(t->root);
    t->root[0] = t->cache[0] = '\0';
}

/* The file at path, NUL-terminated (malloc'd). */
static inline char *cli_slurp(const char *path) {
    size_t len;
    return tu_read_file(path, &len);
}

/* The integer after "label: " at the start of a line of text; -1 if absent. */
static inline long cli_field(const char *text, const char *label) {
    size_t n = strlen(label);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, label, n) == 0 && p[n] == ':' && p[n + 1] == ' ')
            return strtol(p + n + 2, NULL, 10);
    return -1;
}

static inline double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What one run ended with. */
typedef struct cli_result {
    int code;    /* exit status, or 128 + the signal that ended it */
    char *out;   /* stdout, NUL-terminated (malloc'd: cli_result_free) */
    char *err;   /* stderr, the same */
    double secs; /* wall time from the start of the run to its end */
} cli_result;

static inline void cli_result_free(cli_result *r) {
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* A run started and not yet waited for (cli_wait). */
typedef struct cli_proc {
    pid_t pid;
    char out_path[300], err_path[300]; /* where its stdout and stderr go */
    double t0;                         /* when it started (cli_now) */
} cli_proc;

/* Starts fusec with args (NULL-terminated, without the program name) in a child process: its
 * stdout and stderr go to new files in t->root, FUSEC_CACHE_DIR is cache and
 * FUSEC_REQUIRE_CACHED is require (NULL: unset), FUSEC_TRACE and FUSEC_LOG are unset.
 * cli_wait waits for it. */
static inline cli_proc cli_spawn(cli_tmp *t, const char *cache, const char *require,
                                 const char *const *args) {
    cr_assert(t->root[0], "no temporary directory (cli_tmp_make)");
    cli_proc p;
    snprintf(p.out_path, sizeof p.out_path, "%s/run%d.out", t->root, t->runs);
    snprintf(p.err_path, sizeof p.err_path, "%s/run%d.err", t->root, t->runs++);
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)CLI_FUSEC;
    for (; args[n - 1]; n++) {
        cr_assert_lt(n, 63, "too many arguments for %s", CLI_FUSEC);
        argv[n] = (char *)args[n - 1];
    }
    argv[n] = NULL;
    p.t0 = cli_now();
    p.pid = fork();
    cr_assert_neq(p.pid, -1, "fork: %s", strerror(errno));
    if (p.pid == 0) {
        int fo = open(p.out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(p.err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0) _exit(CLI_EXIT_REDIRECT);
        dup2(fo, 1);
        dup2(fe, 2);
        if (cache) setenv("FUSEC_CACHE_DIR", cache, 1);
        else unsetenv("FUSEC_CACHE_DIR");
        if (require) setenv("FUSEC_REQUIRE_CACHED", require, 1);
        else unsetenv("FUSEC_REQUIRE_CACHED");
        unsetenv("FUSEC_TRACE");
        unsetenv("FUSEC_LOG");
        execv(CLI_FUSEC, argv);
        _exit(CLI_EXIT_EXEC);
    }
    return p;
}

/* Waits for the run p to end (however it ends: a killed one too) and reads its outputs. */
static inline cli_result cli_wait(const cli_proc *p) {
    int status;
    cr_assert_eq(waitpid(p->pid, &status, 0), p->pid);
    cli_result r;
    r.secs = cli_now() - p->t0;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    cr_assert_neq(r.code, CLI_EXIT_REDIRECT, "could not redirect the output of %s", CLI_FUSEC);
    cr_assert_neq(r.code, CLI_EXIT_EXEC, "could not start %s", CLI_FUSEC);
    r.out = cli_slurp(p->out_path);
    r.err = cli_slurp(p->err_path);
    return r;
}

/* cli_spawn, then cli_wait. */
static inline cli_result cli_run(cli_tmp *t, const char *cache, const char *require,
                                 const char *const *args) {
    cli_proc p = cli_spawn(t, cache, require, args);
    return cli_wait(&p);
}

/* cli_run with the arguments listed, NULL last: cli_runl(t, t->cache, NULL, "warm", f, NULL). */
static inline cli_result cli_runl(cli_tmp *t, const char *cache, const char *require, ...) {
    const char *args[64];
    int n = 0;
    va_list ap;
    va_start(ap, require);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        if (n == 63) break;
        args[n++] = a;
    }
    va_end(ap);
    cr_assert_lt(n, 63, "too many arguments for %s", CLI_FUSEC);
    args[n] = NULL;
    return cli_run(t, cache, require, args);
}

#endif /* FUSEC_TESTS_CLI_UTIL_H */
