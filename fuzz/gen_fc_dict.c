/*
 * fuzz/gen_fc_dict.c - writes fuzz/fc.dict, the libFuzzer dictionary of fuzz_fc: every name
 * the .fc parser accepts (keywords, dtypes, functions and their keyword arguments, methods,
 * attributes, string values, operators), enumerated by fcf_names from the parser's own
 * tables, as tests/test_fc_docs.c does. Run it and check the output in whenever the parser
 * learns a name (the test fuzz_dict_current fails until then):
 *
 *     cmake --build build --target fuzz_gen_fc_dict && build/fuzz/fuzz_gen_fc_dict > fuzz/fc.dict
 */
#include "formats.h"

#include <stdio.h>
#include <string.h>

static void entry(const char *kind, const char *text) {
    printf("%s=\"", kind);
    for (const char *s = text; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if (*s < 0x20 || *s > 0x7e) printf("\\x%02X", (unsigned char)*s);
        else putchar(*s);
    }
    printf("\"\n");
}

static void visit(void *user, fcf_name_kind kind, const char *name, const char *owner) {
    (void)user, (void)owner;
    char buf[300];
    switch (kind) {
    case FCF_KEYWORD: case FCF_DTYPE: case FCF_OPERATOR: entry("tok", name); break;
    case FCF_FUNCTION: snprintf(buf, sizeof buf, "%s(", name); entry("fn", buf); break;
    case FCF_PARAM: case FCF_METHOD_PARAM:
        snprintf(buf, sizeof buf, "%s=", name);
        entry("kw", buf);
        break;
    case FCF_METHOD: snprintf(buf, sizeof buf, ".%s(", name); entry("method", buf); break;
    case FCF_ATTRIBUTE: snprintf(buf, sizeof buf, ".%s", name); entry("attr", buf); break;
    case FCF_STRING: snprintf(buf, sizeof buf, "\"%s\"", name); entry("str", buf); break;
    }
}

int main(void) {
    printf("# fuzz/fc.dict: written by fuzz/gen_fc_dict.c; do not edit.\n");
    fcf_names(visit, NULL);
    /* Statement shapes the names alone do not give. */
    entry("stmt", " = input f32 [");
    entry("stmt", "\nout ");
    entry("stmt", "[:, ::-1]");
    entry("stmt", "[None, ...]");
    return 0;
}
