/*
 * tests/test_header_example.c - the tutorial that opens include/fusec.h compiles, runs, and
 * prints the right numbers.
 *
 * The example is pasted below between the markers with its main renamed; one test checks
 * that the paste is still identical to the header's text, another runs it with stdout
 * captured and checks the five values it prints against libm.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define main header_example_main
int header_example_main(void);
/* BEGIN header example */
#include <fusec.h>
#include <stdio.h>

int main(void) {
    fc_ctx *ctx;
    if (fc_ctx_create(&ctx, NULL) != FC_OK) return 1;   // GPU if there is one, else host
    fc_scope *s = fc_scope_open(ctx);                   // temporaries die at close

    fc_array *x = fc_random_uniform(ctx, FC_F32, FC_SHAPE(1 << 20), 42);
    fc_array *y = fc_tanh(fc_add(fc_sin(x), fc_mul(x, fc_f64(ctx, 0.1))));  // lazy

    float head[5];
    if (fc_read(y, head, 0, 5) != FC_OK)                // evaluates, then copies out
        fprintf(stderr, "fusec: %s\n", fc_errmsg(ctx));
    else
        printf("%g %g %g %g %g\n", head[0], head[1], head[2], head[3], head[4]);
    fc_scope_close(s);
    fc_ctx_destroy(ctx);
    return 0;
}
/* END header example */
#undef main

/* Reads a whole file into a NUL-terminated malloc'd buffer. */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = (len + 4096 + 1) * 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
        size_t got = fread(buf + len, 1, 4096, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* The text between the markers above, as this file holds it. */
static char *pasted_example(void) {
    char *src = slurp(FUSEC_SOURCE_DIR "/tests/test_header_example.c");
    const char *begin_marker = "/* BEGIN header example */\n";
    char *begin = strstr(src, begin_marker);
    cr_assert_not_null(begin);
    begin += strlen(begin_marker);
    char *end = strstr(begin, "/* END header example */");
    cr_assert_not_null(end);
    *end = '\0';
    char *text = strdup(begin);
    free(src);
    return text;
}

/* The header's example: the comment lines from "#include <fusec.h>" to the closing "}",
 * with the comment's " *     " indentation taken off. */
static char *header_example(void) {
    char *hdr = slurp(FUSEC_SOURCE_DIR "/include/fusec.h");
    size_t cap = strlen(hdr) + 1, len = 0;
    char *out = malloc(cap);
    cr_assert_not_null(out);
    bool inside = false, done = false;
    for (char *line = strtok(hdr, "\n"); line && !done; line = strtok(NULL, "\n")) {
        const char *body;
        if (strncmp(line, " *     ", 7) == 0) body = line + 7;
        else if (strcmp(line, " *") == 0) body = "";
        else if (inside) break; /* the comment's text ended without a closing brace */
        else continue;
        if (!inside && strcmp(body, "#include <fusec.h>") == 0) inside = true;
        if (!inside) continue;
        len += (size_t)sprintf(out + len, "%s\n", body);
        if (strcmp(body, "}") == 0) done = true;
    }
    free(hdr);
    cr_assert(done, "no example ending in '}' found in include/fusec.h");
    return out;
}

Test(header_example, pasted_text_matches_the_header) {
    char *pasted = pasted_example(), *header = header_example();
    cr_assert_str_eq(pasted, header,
                     "the example in this file differs from include/fusec.h's:\n--- here\n%s--- header\n%s",
                     pasted, header);
    free(pasted);
    free(header);
}

Test(header_example, prints_tanh_of_sin_plus_a_tenth) {
    /* Run the example with stdout going to a temporary file. */
    FILE *capture = tmpfile();
    cr_assert_not_null(capture);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    cr_assert(saved >= 0);
    cr_assert(dup2(fileno(capture), STDOUT_FILENO) >= 0);
    int rc = header_example_main();
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    cr_assert_eq(rc, 0);

    char printed[512];
    memset(printed, 0xA5, sizeof printed);
    rewind(capture);
    size_t n = fread(printed, 1, sizeof printed - 1, capture);
    printed[n] = '\0';
    fclose(capture);

    double shown[5];
    char *p = printed, *next;
    for (int i = 0; i < 5; i++) {
        shown[i] = strtod(p, &next);
        cr_assert(next != p, "the example printed '%s', expected five numbers", printed);
        p = next;
    }
    cr_assert_str_eq(p, "\n", "trailing output after five numbers: '%s'", p);

    /* The same x (the seed defines it), then the formula in double precision with libm. */
    fc_ctx *ctx;
    fc_ctx_options opts = {.backend = FC_BACKEND_HOST};
    cr_assert_eq(fc_ctx_create(&ctx, &opts), FC_OK);
    fc_array *x = fc_random_uniform(ctx, FC_F32, FC_SHAPE(1 << 20), 42);
    float xs[5];
    memset(xs, 0xA5, sizeof xs);
    cr_assert_eq(fc_read(x, xs, 0, 5), FC_OK, "%s", fc_errmsg(ctx));
    fc_release(x);
    fc_ctx_destroy(ctx);

    bool all_same = true;
    for (int i = 0; i < 5; i++) {
        cr_assert(xs[i] >= 0.0f && xs[i] < 1.0f, "x[%d] = %g is outside [0, 1)", i, xs[i]);
        all_same = all_same && xs[i] == xs[0];
        double want = tanh(sin((double)xs[i]) + 0.1 * xs[i]);
        /* %g keeps six significant digits. */
        cr_assert(fabs(shown[i] - want) <= 1e-5 * fabs(want) + 1e-7,
                  "value %d: printed %.9g, expected %.9g (x = %.9g)", i, shown[i], want, xs[i]);
    }
    cr_assert(!all_same, "the five x values are all %g", xs[0]);
}
