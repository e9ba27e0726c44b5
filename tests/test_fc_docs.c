/*
 * tests/test_fc_docs.c - docs/FC_FORMAT.md documents every name the .fc parser accepts.
 *
 * fcf_names (formats/fc_parse.c) enumerates the names from the very tables the parser
 * dispatches from, so a name added to the parser without a line in the reference fails here.
 * The reference's convention, which this test checks:
 *
 *   keyword, dtype, operator   `NAME`
 *   function                   `NAME(...)`; some such signature names every keyword argument
 *   method                     `x.NAME(...)`; likewise for its keyword arguments
 *   attribute                  `x.NAME`
 *   string value               "NAME"
 *
 * Besides: every enumerated name is one the parser really accepts (the enumeration is not
 * wider than the parser), and every ```fc block of the reference parses and builds.
 */
#include <criterion/criterion.h>

#include <fusec.h>

#include "formats.h" /* fcf_names */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOC_PATH FUSEC_SOURCE_DIR "/docs/FC_FORMAT.md"

static char *read_doc(void) {
    size_t n;
    char *buf = tu_read_file(DOC_PATH, &n);
    cr_assert_gt(n, 0);
    return buf;
}

static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether word occurs as a whole word in s[0..n). */
static bool has_word(const char *s, size_t n, const char *word) {
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++) {
        if (memcmp(s + i, word, w) != 0) continue;
        bool before = i > 0 && ident_char(s[i - 1]);
        bool after = i + w < n && ident_char(s[i + w]);
        if (!before && !after) return true;
    }
    return false;
}

/* Whether some code span opening "`PREFIX(" names word before its closing backtick. */
static bool signature_names(const char *doc, const char *prefix, const char *word) {
    char open[256];
    snprintf(open, sizeof open, "`%s(", prefix);
    for (const char *p = strstr(doc, open); p; p = strstr(p + 1, open)) {
        const char *start = p + strlen(open);
        const char *end = strchr(start, '`');
        if (!end) return false;
        if (has_word(start, (size_t)(end - start), word)) return true;
    }
    return false;
}

static const char *const kind_names[] = {"keyword",   "dtype",          "function",
                                         "parameter", "method",         "method parameter",
                                         "attribute", "string value",   "operator"};

typedef struct doc_check {
    const char *doc;
    int count[FCF_OPERATOR + 1];
    int missing;
    char report[16384];
    size_t len;
} doc_check;

static bool documented(const char *doc, fcf_name_kind kind, const char *name, const char *owner) {
    char needle[300];
    switch (kind) {
    case FCF_KEYWORD:
    case FCF_DTYPE:
    case FCF_OPERATOR: snprintf(needle, sizeof needle, "`%s`", name); break;
    case FCF_FUNCTION: snprintf(needle, sizeof needle, "`%s(", name); break;
    case FCF_METHOD: snprintf(needle, sizeof needle, "`x.%s(", name); break;
    case FCF_ATTRIBUTE: snprintf(needle, sizeof needle, "`x.%s`", name); break;
    case FCF_STRING: snprintf(needle, sizeof needle, "\"%s\"", name); break;
    case FCF_PARAM: return signature_names(doc, owner, name);
    case FCF_METHOD_PARAM: {
        char prefix[200];
        snprintf(prefix, sizeof prefix, "x.%s", owner);
        return signature_names(doc, prefix, name);
    }
    }
    return strstr(doc, needle) != NULL;
}

static void check_name(void *user, fcf_name_kind kind, const char *name, const char *owner) {
    doc_check *c = user;
    cr_assert(kind >= FCF_KEYWORD && kind <= FCF_OPERATOR);
    cr_assert(name && name[0]);
    c->count[kind]++;
    if (documented(c->doc, kind, name, owner)) return;
    c->missing++;
    int n = snprintf(c->report + c->len, sizeof c->report - c->len, "  %s '%s'%s%s%s\n",
                     kind_names[kind], name, owner ? " (of " : "", owner ? owner : "",
                     owner ? ")" : "");
    if (n > 0 && c->len + (size_t)n < sizeof c->report) c->len += (size_t)n;
}

Test(fc_docs, every_accepted_name_is_documented) {
    doc_check *c = calloc(1, sizeof *c);
    c->doc = read_doc();
    fcf_names(check_name, c);
    /* The enumeration is not empty by accident. */
    cr_assert_geq(c->count[FCF_KEYWORD], 9);
    cr_assert_geq(c->count[FCF_DTYPE], 2 * FC_DTYPE_COUNT);
    cr_assert_geq(c->count[FCF_FUNCTION], 120);
    cr_assert_geq(c->count[FCF_PARAM], 80);
    cr_assert_geq(c->count[FCF_METHOD], 15);
    cr_assert_geq(c->count[FCF_METHOD_PARAM], 20);
    cr_assert_geq(c->count[FCF_ATTRIBUTE], 7);
    cr_assert_geq(c->count[FCF_STRING], 5);
    cr_assert_geq(c->count[FCF_OPERATOR], 28);
    cr_assert_eq(c->missing, 0, "docs/FC_FORMAT.md does not document %d name%s the parser accepts "
                 "(see the convention at the top of tests/test_fc_docs.c):\n%s",
                 c->missing, c->missing == 1 ? "" : "s", c->report);
    free((char *)c->doc);
    free(c);
}

/* The checker itself: names the reference lacks are reported, in every form. */
Test(fc_docs, an_undocumented_name_is_caught) {
    doc_check *c = calloc(1, sizeof *c);
    c->doc = read_doc();
    check_name(c, FCF_FUNCTION, "frobnicate", NULL);
    check_name(c, FCF_PARAM, "frobnication", "sum");
    check_name(c, FCF_PARAM, "a", "frobnicate");
    check_name(c, FCF_METHOD, "frobnicate", "sum");
    check_name(c, FCF_METHOD_PARAM, "frobnication", "sum");
    check_name(c, FCF_ATTRIBUTE, "frob", NULL);
    check_name(c, FCF_KEYWORD, "frobnicated", NULL);
    check_name(c, FCF_DTYPE, "f99", NULL);
    check_name(c, FCF_STRING, "frobnicate", "pad");
    check_name(c, FCF_OPERATOR, "<>", NULL);
    cr_assert_eq(c->missing, 10, "%s", c->report);
    /* A parameter counts only inside its own function's signature: `a` is everywhere. */
    cr_assert(strstr(c->doc, "`sum(a"));
    check_name(c, FCF_PARAM, "a", "sum");
    cr_assert_eq(c->missing, 10);
    free((char *)c->doc);
    free(c);
}

/* ---- the enumeration is what the parser accepts ----------------------------------------- */

/* Parses text; returns the status and copies the message (parse errors only, no build). */
static fc_status parse_only(fc_ctx *ctx, const char *text, char *msg, size_t size) {
    fc_program *p = NULL;
    fc_status st = fc_program_parse(ctx, text, strlen(text), "names.fc", &p);
    snprintf(msg, size, "%s", st == FC_OK ? "" : fc_errmsg(ctx));
    fc_program_destroy(p);
    return st;
}

/* Parses and builds text; returns the status, the message in msg. */
static fc_status parse_build(fc_ctx *ctx, const char *text, char *msg, size_t size) {
    fc_program *p = NULL;
    fc_status st = fc_program_parse(ctx, text, strlen(text), "names.fc", &p);
    if (st == FC_OK) {
        for (int i = 0; i < fc_program_num_symbols(p); i++)
            fc_program_set_symbol(p, fc_program_symbol_name(p, i), 4);
        fc_scope *s = fc_scope_open(ctx);
        fc_array *outs[16];
        cr_assert_leq(fc_program_num_outputs(p), 16);
        st = fc_program_build(p, NULL, outs);
        fc_scope_close(s);
    }
    snprintf(msg, size, "%s", st == FC_OK ? "" : fc_errmsg(ctx));
    fc_program_destroy(p);
    return st;
}

#define X_DECL "x = input f32 [2, 3]\n"
/* x, and sparse matrices built without evaluating: a COO, c CSR */
#define SPARSE_DECL                                                                             \
    X_DECL "v = input f32 [4]\ni = input i32 [4]\n"                                              \
           "p = input i32 [3]\na = sparse.coo_matrix((v, (i, i)), shape=(2, 3))\n"            \
           "c = sparse.csr_matrix((v, i, p), shape=(2, 3))\n"

static void check_accepted(void *user, fcf_name_kind kind, const char *name, const char *owner) {
    fc_ctx *ctx = user;
    char text[512], msg[1024];
    switch (kind) {
    case FCF_KEYWORD:
    case FCF_DTYPE:
        snprintf(text, sizeof text, "%s = 1\nout %s\n", name, name);
        cr_assert_eq(parse_only(ctx, text, msg, sizeof msg), FC_ERR_PARSE, "%s", name);
        cr_assert(strstr(msg, "reserved word"), "%s %s: %s", kind_names[kind], name, msg);
        if (kind == FCF_DTYPE) {
            snprintf(text, sizeof text, X_DECL "y = cast(x, %s)\nout y\n", name);
            cr_assert_eq(parse_build(ctx, text, msg, sizeof msg), FC_OK, "%s: %s", name, msg);
        }
        return;
    case FCF_FUNCTION:
        snprintf(text, sizeof text, X_DECL "y = %s()\nout y\n", name);
        parse_only(ctx, text, msg, sizeof msg);
        cr_assert(!strstr(msg, "unknown function"), "function %s: %s", name, msg);
        return;
    case FCF_PARAM:
        snprintf(text, sizeof text, X_DECL "y = %s(%s=1)\nout y\n", owner, name);
        parse_only(ctx, text, msg, sizeof msg);
        cr_assert(!strstr(msg, "unexpected keyword") && !strstr(msg, "no keyword"),
                  "%s(%s=): %s", owner, name, msg);
        return;
    case FCF_METHOD:
        snprintf(text, sizeof text, X_DECL "y = x.%s()\nout y\n", name);
        parse_only(ctx, text, msg, sizeof msg);
        cr_assert(!strstr(msg, "unknown") && !strstr(msg, "attribute"), "x.%s(): %s", name, msg);
        return;
    case FCF_METHOD_PARAM:
        snprintf(text, sizeof text, X_DECL "y = x.%s(%s=1)\nout y\n", owner, name);
        parse_only(ctx, text, msg, sizeof msg);
        cr_assert(!strstr(msg, "unexpected keyword") && !strstr(msg, "no keyword"),
                  "x.%s(%s=): %s", owner, name, msg);
        return;
    case FCF_ATTRIBUTE:
        /* a sparse matrix's own (nnz, data, ...) on a COO matrix, which has them all but
         * indices and indptr, c's (a CSR matrix's) */
        if (owner && strcmp(owner, "sparse") == 0)
            snprintf(text, sizeof text, SPARSE_DECL "y = %s.%s\nz = x\nout z\n",
                     strcmp(name, "indices") == 0 || strcmp(name, "indptr") == 0 ? "c" : "a",
                     name);
        else
            snprintf(text, sizeof text, X_DECL "y = x.%s\nz = x\nout z\n", name);
        cr_assert_eq(parse_build(ctx, text, msg, sizeof msg), FC_OK, "x.%s: %s", name, msg);
        return;
    case FCF_STRING:
        if (strcmp(owner, "pad") == 0)
            snprintf(text, sizeof text, X_DECL "y = pad(x, 1, mode=\"%s\")\nout y\n", name);
        else if (strcmp(owner, "take") == 0)
            snprintf(text, sizeof text, X_DECL "y = take(x, x > 0, mode=\"%s\")\nout y\n",
                     name);
        else if (strcmp(owner, "scatter_add") == 0)
            snprintf(text, sizeof text,
                     X_DECL "i = input i32 [2]\ny = scatter_add(x, i, 1.0, mode=\"%s\")\nout y\n",
                     name);
        else if (strcmp(owner, "sort") == 0 || strcmp(owner, "partition") == 0)
            snprintf(text, sizeof text, X_DECL "y = %s(x, %skind=\"%s\")\nout y\n", owner,
                     owner[0] == 'p' ? "1, " : "", name);
        else if (strcmp(owner, "convolve") == 0)
            snprintf(text, sizeof text, X_DECL "y = convolve(x[0], x[1], mode=\"%s\")\nout y\n",
                     name);
        else if (strcmp(owner, "convolve2d") == 0 || strcmp(owner, "method") == 0)
            snprintf(text, sizeof text, X_DECL "y = signal.convolve2d(x, x, %s=\"%s\")\nout y\n",
                     owner[0] == 'm' ? "method" : "boundary", name);
        else
            snprintf(text, sizeof text, X_DECL "y = %s(x, norm=\"%s\")\nout y\n", owner, name);
        cr_assert_eq(parse_build(ctx, text, msg, sizeof msg), FC_OK, "\"%s\" (%s): %s", name,
                     owner, msg);
        return;
    case FCF_OPERATOR:
        snprintf(text, sizeof text, X_DECL "y = x %s x\nout y\n", name);
        parse_only(ctx, text, msg, sizeof msg);
        cr_assert(!strstr(msg, "unexpected character"), "operator %s: %s", name, msg);
        return;
    }
    cr_assert_fail("unknown kind %d", (int)kind);
}

Test(fc_docs, every_enumerated_name_is_accepted) {
    fc_ctx *ctx = tu_host_ctx();
    fcf_names(check_accepted, ctx);
    fc_ctx_destroy(ctx);
}

/* ---- the reference's examples ----------------------------------------------------------- */

Test(fc_docs, every_example_parses_and_builds) {
    char *doc = read_doc();
    fc_ctx *ctx = tu_host_ctx();
    int examples = 0;
    const char *fence = "```fc\n";
    for (char *p = strstr(doc, fence); p; p = strstr(p, fence)) {
        char *start = p + strlen(fence);
        char *end = strstr(start, "```");
        cr_assert(end, "an unterminated ```fc block");
        int line = 1;
        for (char *q = doc; q < start; q++) line += *q == '\n';
        char saved = *end;
        *end = '\0';
        char msg[1024];
        fc_status st = parse_build(ctx, start, msg, sizeof msg);
        cr_assert_eq(st, FC_OK, "the example at docs/FC_FORMAT.md:%d: %s\n%s", line, msg, start);
        *end = saved;
        examples++;
        p = end + 3;
    }
    cr_assert_geq(examples, 8);
    fc_ctx_destroy(ctx);
    free(doc);
}
