/*
 * test_env.c - the environment variables fc_ctx_create reads, when they hold something
 * unexpected: FUSEC_BACKEND with an unknown value fails the call and says why; FUSEC_LOG with
 * an unknown word warns, once per process. (Criterion runs each test in a process of its own,
 * so the once-per-process warning starts afresh in each.)
 */
#include <criterion/criterion.h>
#include <fusec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* stderr of the code between capture_begin and capture_end, as a string. */
static FILE *cap;
static int saved_fd = -1;
static char captured[8192];

static void capture_begin(void) {
    fflush(stderr);
    cap = tmpfile();
    cr_assert_not_null(cap);
    saved_fd = dup(STDERR_FILENO);
    cr_assert_geq(saved_fd, 0);
    cr_assert_geq(dup2(fileno(cap), STDERR_FILENO), 0);
}

static const char *capture_end(void) {
    fflush(stderr);
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    rewind(cap);
    size_t n = fread(captured, 1, sizeof captured - 1, cap);
    captured[n] = '\0';
    fclose(cap);
    return captured;
}

static int count(const char *text, const char *s) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, s)); p += strlen(s)) n++;
    return n;
}

static void clean_env(void) {
    unsetenv("FUSEC_BACKEND");
    unsetenv("FUSEC_LOG");
    unsetenv("FUSEC_TRACE");
    unsetenv("FUSEC_FAST_MATH");
}

TestSuite(env, .init = clean_env);

Test(env, unknown_backend_fails_and_names_variable_value_and_choices) {
    setenv("FUSEC_BACKEND", "bogus", 1);
    fc_ctx *ctx = (fc_ctx *)&ctx; /* must be set to NULL */
    capture_begin();
    fc_status st = fc_ctx_create(&ctx, NULL);
    const char *err = capture_end();
    cr_assert_eq(st, FC_ERR_INVALID, "status %d", st);
    cr_assert_null(ctx);
    cr_assert_not_null(strstr(err, "FUSEC_BACKEND"), "%s", err);
    cr_assert_not_null(strstr(err, "\"bogus\""), "%s", err);
    cr_assert_not_null(strstr(err, "host, cuda or auto"), "%s", err);
    /* Case matters: the accepted values are exactly these words. */
    setenv("FUSEC_BACKEND", "Host", 1);
    capture_begin();
    st = fc_ctx_create(&ctx, NULL);
    capture_end();
    cr_assert_eq(st, FC_ERR_INVALID);
}

Test(env, known_backend_values_and_explicit_backends_are_accepted) {
    const char *ok[] = {"host", "auto", ""};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        setenv("FUSEC_BACKEND", ok[i], 1);
        fc_ctx *ctx = NULL;
        capture_begin();
        fc_status st = fc_ctx_create(&ctx, NULL);
        const char *err = capture_end();
        cr_assert_eq(st, FC_OK, "FUSEC_BACKEND=\"%s\": status %d: %s", ok[i], st, err);
        if (strcmp(ok[i], "host") == 0) cr_assert_eq(fc_ctx_backend(ctx), FC_BACKEND_HOST);
        fc_ctx_destroy(ctx);
    }
    /* The variable overrides AUTO only: a program that names its backend never reads it. */
    setenv("FUSEC_BACKEND", "bogus", 1);
    fc_ctx_options opts;
    memset(&opts, 0, sizeof opts);
    opts.backend = FC_BACKEND_HOST;
    fc_ctx *ctx = NULL;
    cr_assert_eq(fc_ctx_create(&ctx, &opts), FC_OK);
    cr_assert_eq(fc_ctx_backend(ctx), FC_BACKEND_HOST);
    fc_ctx_destroy(ctx);
}

Test(env, unknown_log_word_warns_once) {
    setenv("FUSEC_LOG", "passes,bogus", 1);
    capture_begin();
    fc_ctx *a = NULL, *b = NULL;
    fc_status sa = fc_ctx_create(&a, NULL), sb = fc_ctx_create(&b, NULL);
    const char *err = capture_end();
    cr_assert_eq(sa, FC_OK);
    cr_assert_eq(sb, FC_OK);
    fc_ctx_destroy(a);
    fc_ctx_destroy(b);
    cr_assert_eq(count(err, "FUSEC_LOG"), 1, "expected one warning, got:\n%s", err);
    cr_assert_not_null(strstr(err, "unknown value \"bogus\""), "%s", err);
    cr_assert_null(strstr(err, "\"passes\""), "a known word was reported: %s", err);
    cr_assert_not_null(strstr(err, "passes, fusion, shard, timing or all"), "%s", err);
}

Test(env, known_log_words_do_not_warn) {
    const char *ok[] = {"passes", "fusion", "shard", "timing", "all", "passes,fusion,shard,timing",
                        " fusion , passes ", ""};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        setenv("FUSEC_LOG", ok[i], 1);
        fc_ctx *ctx = NULL;
        capture_begin();
        fc_status st = fc_ctx_create(&ctx, NULL);
        const char *err = capture_end();
        cr_assert_eq(st, FC_OK);
        fc_ctx_destroy(ctx);
        cr_assert_str_empty(err, "FUSEC_LOG=\"%s\" warned: %s", ok[i], err);
    }
}

/* FUSEC_FAST_MATH: 1 turns the fast-math tier on where fc_ctx_options.fast_math is 0; 0 or ""
 * leave it off; the option (1 or -1) overrides it; anything else fails, naming the value. */
Test(env, fast_math_from_variable_and_options) {
    static const struct { const char *env; int opt; int want; } cases[] = {
        {NULL, 0, 0}, {"0", 0, 0}, {"", 0, 0}, {"1", 0, 1}, {"1", -1, 0}, {"0", 1, 1},
        {NULL, 1, 1}, {NULL, -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].env) setenv("FUSEC_FAST_MATH", cases[i].env, 1);
        else unsetenv("FUSEC_FAST_MATH");
        fc_ctx_options o = {0};
        o.backend = FC_BACKEND_HOST;
        o.fast_math = cases[i].opt;
        fc_ctx *ctx;
        cr_assert_eq(fc_ctx_create(&ctx, &o), FC_OK, "case %zu", i);
        cr_assert_eq(fc_ctx_fast_math(ctx), cases[i].want, "case %zu", i);
        fc_ctx_destroy(ctx);
    }
    cr_assert_eq(fc_ctx_fast_math(NULL), 0);
}

Test(env, unknown_fast_math_value_and_option_fail) {
    setenv("FUSEC_FAST_MATH", "yes", 1);
    fc_ctx *ctx = (fc_ctx *)&ctx;
    capture_begin();
    fc_status st = fc_ctx_create(&ctx, &(fc_ctx_options){.backend = FC_BACKEND_HOST});
    const char *err = capture_end();
    cr_assert_eq(st, FC_ERR_INVALID);
    cr_assert_null(ctx);
    cr_assert(strstr(err, "FUSEC_FAST_MATH") && strstr(err, "\"yes\""), "stderr: %s", err);
    unsetenv("FUSEC_FAST_MATH");
    capture_begin();
    st = fc_ctx_create(&ctx, &(fc_ctx_options){.backend = FC_BACKEND_HOST, .fast_math = 2});
    err = capture_end();
    cr_assert_eq(st, FC_ERR_INVALID);
    cr_assert(strstr(err, "fast_math is 2"), "stderr: %s", err);
}
