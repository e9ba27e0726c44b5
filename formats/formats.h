/*
 * formats/formats.h - internal: the text formats over the graph (.fc parser and printer,
 * traces; .npy is public API only). Prefix fcf_.
 */
#ifndef FUSEC_FORMATS_H
#define FUSEC_FORMATS_H

#include "graph.h"

/* ---- the .fc format (formats/fc_parse.c, formats/fc_print.c) --------------------------- */

/* Whether a name is a reserved word of the .fc format (keywords, literals, dtype names):
 * the parser rejects it as a variable and the printer never generates it. */
bool fcf_name_is_reserved(const char *name, size_t len);

/* Whether `name(...)` calls a function of the .fc format (a builtin, not a kernel variable):
 * the printer never names a kernel variable so, since the variable would hide the function. */
bool fcf_name_is_function(const char *name, size_t len);

/* Every name the .fc parser accepts, enumerated from the tables it dispatches from, so that
 * tests/test_fc_docs.c can require docs/FC_FORMAT.md to document each one. */
typedef enum fcf_name_kind {
    FCF_KEYWORD,      /* a reserved word (True, None, input, out, ...) */
    FCF_DTYPE,        /* a dtype name; owner: the short name of a NumPy long name */
    FCF_FUNCTION,     /* name(...); owner: the op's NumPy name, for another spelling of it */
    FCF_PARAM,        /* a keyword argument of the function owner */
    FCF_METHOD,       /* x.name(...); owner: the function it calls */
    FCF_METHOD_PARAM, /* a keyword argument of the method owner */
    FCF_ATTRIBUTE,    /* x.name; owner: the function it calls, or NULL (shape, ndim, ...) */
    FCF_STRING,       /* a string value the function owner accepts ("symmetric") */
    FCF_OPERATOR      /* an operator or other punctuation */
} fcf_name_kind;
typedef void (*fcf_name_fn)(void *user, fcf_name_kind kind, const char *name, const char *owner);
void fcf_names(fcf_name_fn visit, void *user);

/* formats/trace.c: appends the program computing arrays[0..n) to ctx->trace_path, if set.
 * Never fails the caller: a write error warns once on stderr. */
void fcf_trace_eval(fc_ctx *ctx, fc_array *const *arrays, int n);


#endif /* FUSEC_FORMATS_H */
