/*
 * graph/user.c - user kernels (cupy.ElementwiseKernel / ReductionKernel): their definitions
 * and their calls as nodes of the graph.
 *
 * A definition is parsed once (parameters, placeholders, which names the body reads) and
 * hashed over its canonical text; the context keeps it (fcg_user_find) and its nodes carry
 * only the hash (p.ival), so hashing, consing and plan keys treat a call like any op. A call
 * binds the placeholders from its arguments as CuPy does (arrays first, then scalars), casts
 * weak scalars to their parameters' types and checks that arrays have theirs exactly; the
 * node's inputs then have their parameters' dtypes, which is how codegen and the host backend
 * find each placeholder's dtype again (fcg_user_place_dtype).
 */
#include "graph.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

/* ---- definitions ------------------------------------------------------------------------ */

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* C and C++ words a placeholder or parameter may not be (the body declares them as such). */
static bool reserved_word(const char *w) {
    static const char *const words[] = {
        "auto", "bool", "break", "case", "char", "class", "const", "continue", "default", "do",
        "double", "else", "enum", "extern", "float", "for", "goto", "half", "if", "inline",
        "int", "long", "namespace", "new", "operator", "raw", "register", "return", "short",
        "signed", "sizeof", "static", "struct", "switch", "template", "this", "typedef",
        "typename", "union", "unsigned", "using", "void", "volatile", "while", "true", "false"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcmp(w, words[i]) == 0) return true;
    return false;
}

/* Names the generated code uses around the body: the element index i, the kernel's
 * argument block p, CuPy's _ind, fusec's fcx_ prefix, and a letter followed by digits (the
 * generator's variables: v12, a3, ...). */
static bool generated_name(const char *w) {
    if (strcmp(w, "i") == 0 || strcmp(w, "p") == 0 || strcmp(w, "_ind") == 0) return true;
    if (strncmp(w, "fcx", 3) == 0 || strncmp(w, "fcu_", 4) == 0) return true;
    if (!isalpha((unsigned char)w[0]) || !w[1]) return false;
    for (const char *c = w + 1; *c; c++)
        if (!isdigit((unsigned char)*c)) return false;
    return true;
}

/* Reads one identifier at *s (after blanks) into buf; false if there is none. */
static bool read_word(const char **s, char *buf, size_t size, bool *too_long) {
    const char *c = *s;
    while (isspace((unsigned char)*c)) c++;
    if (!is_ident_start(*c)) return false;
    size_t n = 0;
    while (is_ident_char(c[n])) n++;
    *too_long = n >= size;
    if (!*too_long) {
        memcpy(buf, c, n);
        buf[n] = 0;
    }
    *s = c + n;
    return true;
}

static int place_of(fcg_user_kernel *k, const char *name, bool add) {
    for (int i = 0; i < k->nplace; i++)
        if (strcmp(k->place[i], name) == 0) return i;
    if (!add || k->nplace == FCG_USER_MAX_PLACEHOLDERS) return -1;
    snprintf(k->place[k->nplace], sizeof k->place[0], "%s", name);
    return k->nplace++;
}

/* A type word: a dtype name (fusec's or NumPy's long one) or a placeholder. */
static fc_status type_of(fc_ctx *ctx, fcg_user_kernel *k, const char *what, const char *word,
                         bool add_place, int *dtype, int *place) {
    fc_dtype t;
    if (fcg_dtype_parse(word, strlen(word), &t) == FC_OK) {
        *dtype = (int)t;
        *place = -1;
        return FC_OK;
    }
    if (reserved_word(word) || generated_name(word))
        return fcg_error(ctx, FC_ERR_INVALID,
                         "%s: %s: '%s' is neither a dtype (float32, int64, f32, ...) nor a usable "
                         "placeholder name", k->name, what, word);
    int pl = place_of(k, word, add_place);
    if (pl < 0 && add_place)
        return fcg_error(ctx, FC_ERR_INVALID, "%s: %s: more than %d type placeholders", k->name,
                         what, FCG_USER_MAX_PLACEHOLDERS);
    if (pl < 0)
        return fcg_error(ctx, FC_ERR_INVALID, "%s: %s: type placeholder '%s' is not bound by any "
                         "input", k->name, what, word);
    *dtype = -1;
    *place = pl;
    return FC_OK;
}

/* Parses "[raw] TYPE NAME, ..." into params. Inputs add placeholders; outputs must use bound
 * ones. */
static fc_status parse_params(fc_ctx *ctx, fcg_user_kernel *k, const char *text, bool inputs,
                              fcg_user_param *params, int *n) {
    const char *what = inputs ? "in_params" : "out_params";
    const char *s = text;
    *n = 0;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return FC_OK;
    for (;;) {
        char w1[FCG_USER_NAME_MAX], w2[FCG_USER_NAME_MAX], w3[FCG_USER_NAME_MAX];
        bool long1 = false, long2 = false, long3 = false;
        int pos = *n + 1;
        if (*n == FCG_USER_MAX_PARAMS)
            return fcg_error(ctx, FC_ERR_INVALID, "%s: %s: more than %d parameters", k->name, what,
                             FCG_USER_MAX_PARAMS);
        if (!read_word(&s, w1, sizeof w1, &long1) || !read_word(&s, w2, sizeof w2, &long2))
            return fcg_error(ctx, FC_ERR_INVALID,
                             "%s: %s: parameter %d is not 'TYPE NAME' (or 'raw TYPE NAME')",
                             k->name, what, pos);
        fcg_user_param *p = &params[*n];
        memset(p, 0, sizeof *p);
        const char *type = w1, *name = w2;
        if (strcmp(w1, "raw") == 0) {
            if (!read_word(&s, w3, sizeof w3, &long3))
                return fcg_error(ctx, FC_ERR_INVALID, "%s: %s: parameter %d: 'raw' needs a type "
                                 "and a name", k->name, what, pos);
            p->raw = true;
            type = w2;
            name = w3;
        }
        if (long1 || long2 || long3)
            return fcg_error(ctx, FC_ERR_INVALID, "%s: %s: parameter %d: a name of %d characters "
                             "or more", k->name, what, pos, FCG_USER_NAME_MAX - 1);
        if (p->raw && !inputs)
            return fcg_error(ctx, FC_ERR_INVALID, "%s: output %s: raw outputs are not supported",
                             k->name, name);
        fc_status st = type_of(ctx, k, what, type, inputs, &p->dtype, &p->place);
        if (st != FC_OK) return st;
        if (reserved_word(name) || generated_name(name))
            return fcg_error(ctx, FC_ERR_INVALID,
                             "%s: %s: '%s' cannot name a parameter (i, p, _ind, fcx..., a letter "
                             "and digits, and C words are taken)", k->name, what, name);
        if (place_of(k, name, false) >= 0)
            return fcg_error(ctx, FC_ERR_INVALID, "%s: %s: '%s' is a type placeholder and a "
                             "parameter", k->name, what, name);
        for (int j = 0; !inputs && j < k->nin; j++)
            if (strcmp(k->in[j].name, name) == 0)
                return fcg_error(ctx, FC_ERR_INVALID,
                                 "%s: output '%s' is also an input: outputs are new arrays",
                                 k->name, name);
        for (int j = 0; j < *n; j++)
            if (strcmp(params[j].name, name) == 0)
                return fcg_error(ctx, FC_ERR_INVALID, "%s: %s: parameter '%s' is declared twice",
                                 k->name, what, name);
        snprintf(p->name, sizeof p->name, "%s", name);
        (*n)++;
        while (isspace((unsigned char)*s)) s++;
        if (!*s) return FC_OK;
        if (*s != ',')
            return fcg_error(ctx, FC_ERR_INVALID, "%s: %s: expected ',' after parameter %d (%s)",
                             k->name, what, pos, name);
        s++;
    }
}

/* Whether identifier `word` occurs in C text (outside string and character literals). */
static bool mentions(const char *text, const char *word) {
    size_t n = strlen(word);
    for (const char *c = text; *c;) {
        if (*c == '"' || *c == '\'') {
            char q = *c++;
            while (*c && *c != q) c += (*c == '\\' && c[1]) ? 2 : 1;
            if (*c) c++;
            continue;
        }
        if (is_ident_start(*c)) {
            const char *w = c;
            while (is_ident_char(*c)) c++;
            if ((size_t)(c - w) == n && memcmp(w, word, n) == 0) return true;
            continue;
        }
        c++;
    }
    return false;
}

static void kernel_free(fc_ctx *ctx, fcg_user_kernel *k) {
    fcg_strfree(ctx, k->in_text);
    fcg_strfree(ctx, k->out_text);
    fcg_strfree(ctx, k->body);
    fcg_strfree(ctx, k->map);
    fcg_strfree(ctx, k->reduce);
    fcg_strfree(ctx, k->post);
    fcg_strfree(ctx, k->identity);
    fcg_free(ctx, k, sizeof *k);
}

void fcg_user_free_all(fc_ctx *ctx) {
    while (ctx->user_kernels) {
        fcg_user_kernel *k = ctx->user_kernels;
        ctx->user_kernels = k->next;
        kernel_free(ctx, k);
    }
}

const fcg_user_kernel *fcg_user_find(const fc_ctx *ctx, uint64_t hash) {
    for (const fcg_user_kernel *k = ctx->user_kernels; k; k = k->next)
        if (k->hash == hash) return k;
    return NULL;
}

/* The canonical text: the parsed parameters (not their spelling) and every piece of code. */
static uint64_t kernel_hash(const fcg_user_kernel *k) {
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    const uint32_t version = 1;
    XXH3_64bits_update(&st, &version, sizeof version);
    XXH3_64bits_update(&st, &k->kind, sizeof k->kind);
    XXH3_64bits_update(&st, k->name, strlen(k->name) + 1);
    for (int io = 0; io < 2; io++) {
        int n = io ? k->nout : k->nin;
        const fcg_user_param *ps = io ? k->out : k->in;
        XXH3_64bits_update(&st, &n, sizeof n);
        for (int i = 0; i < n; i++) {
            const fcg_user_param *p = &ps[i];
            int w[3] = {p->dtype, p->place, p->raw};
            XXH3_64bits_update(&st, w, sizeof w);
            XXH3_64bits_update(&st, p->name, strlen(p->name) + 1);
        }
    }
    for (int i = 0; i < k->nplace; i++) XXH3_64bits_update(&st, k->place[i], strlen(k->place[i]) + 1);
    XXH3_64bits_update(&st, &k->reduce_dtype, sizeof k->reduce_dtype);
    const char *texts[] = {k->body, k->map, k->reduce, k->post, k->identity};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        const char *t = texts[i] ? texts[i] : "";
        XXH3_64bits_update(&st, t, strlen(t) + 1);
    }
    return XXH3_64bits_digest(&st);
}

static bool blank(const char *s) {
    if (!s) return true;
    while (isspace((unsigned char)*s)) s++;
    return !*s;
}

/* Parses and checks a definition; registers it (or returns the equal one already there).
 * Frees k on failure. */
static fc_status define(fc_ctx *ctx, fcg_user_kernel *k, const char *reduce_type,
                        fc_kernel **out) {
    fc_status st = parse_params(ctx, k, k->in_text, true, k->in, &k->nin);
    int nout = 0;
    if (st == FC_OK) st = parse_params(ctx, k, k->out_text, false, k->out, &nout);
    k->nout = nout;
    if (st == FC_OK && k->nout == 0)
        st = fcg_error(ctx, FC_ERR_INVALID, "%s: out_params declares no output", k->name);
    if (st == FC_OK && k->kind == FCG_USER_REDUCTION && k->nout == 1) {
        /* a and b's type: as given (a dtype or an input's placeholder), else the output's */
        int dtype = k->out[0].dtype, place = k->out[0].place;
        if (!blank(reduce_type)) {
            char word[FCG_USER_NAME_MAX];
            bool too_long = false;
            const char *r = reduce_type;
            if (!read_word(&r, word, sizeof word, &too_long) || too_long || !blank(r))
                st = fcg_error(ctx, FC_ERR_INVALID, "%s: reduce_type '%s' is not one type name",
                               k->name, reduce_type);
            else
                st = type_of(ctx, k, "reduce_type", word, false, &dtype, &place);
        }
        k->reduce_dtype = dtype >= 0 ? dtype : -1 - place;
    }
    if (st == FC_OK && k->kind == FCG_USER_REDUCTION) {
        if (k->nout != 1)
            st = fcg_error(ctx, FC_ERR_INVALID, "%s: a reduction kernel has one output, not %d",
                           k->name, k->nout);
        for (int i = 0; i < k->nin && st == FC_OK; i++)
            if (k->in[i].raw)
                st = fcg_error(ctx, FC_ERR_INVALID, "%s: input %s: raw inputs are not supported "
                               "in reduction kernels", k->name, k->in[i].name);
        if (st == FC_OK && (!mentions(k->reduce, "a") || !mentions(k->reduce, "b")))
            st = fcg_error(ctx, FC_ERR_INVALID, "%s: reduce_expr '%s' must use both a and b",
                           k->name, k->reduce);
        if (st == FC_OK && blank(k->identity))
            st = fcg_error(ctx, FC_ERR_INVALID, "%s: identity is required (the value a folds "
                           "from)", k->name);
        if (st == FC_OK && blank(k->map))
            st = fcg_error(ctx, FC_ERR_INVALID, "%s: map_expr is empty", k->name);
        if (st == FC_OK && !mentions(k->post, k->out[0].name))
            st = fcg_error(ctx, FC_ERR_INVALID, "%s: post_map_expr '%s' never sets the output %s",
                           k->name, k->post, k->out[0].name);
    } else if (st == FC_OK && blank(k->body)) {
        st = fcg_error(ctx, FC_ERR_INVALID, "%s: the operation is empty", k->name);
    }
    if (st != FC_OK) {
        kernel_free(ctx, k);
        return st;
    }
    k->uses_i = mentions(k->kind == FCG_USER_REDUCTION ? k->map : k->body, "i");
    k->hash = kernel_hash(k);
    const fcg_user_kernel *same = fcg_user_find(ctx, k->hash);
    if (same) {
        kernel_free(ctx, k);
        *out = (fc_kernel *)same;
        return FC_OK;
    }
    k->next = ctx->user_kernels;
    ctx->user_kernels = k;
    *out = k;
    return FC_OK;
}

static bool valid_kernel_name(const char *name) {
    if (!name || !is_ident_start(name[0]) || strlen(name) >= FCG_USER_NAME_MAX) return false;
    for (const char *c = name; *c; c++)
        if (!is_ident_char(*c)) return false;
    return true;
}

/* A new, zeroed definition with its name and texts, in *out; the error otherwise. */
static fc_status start(fc_ctx *ctx, fcg_user_kind kind, const char *fn, const char *in,
                       const char *outp, const char *name, fcg_user_kernel **out) {
    *out = NULL;
    if (!in || !outp)
        return fcg_error(ctx, FC_ERR_NULL, "%s: in_params and out_params are required", fn);
    if (!valid_kernel_name(name))
        return fcg_error(ctx, FC_ERR_INVALID, "%s: the name '%s' is not a C identifier of at "
                         "most %d characters", fn, name ? name : "(null)", FCG_USER_NAME_MAX - 1);
    fcg_user_kernel *k = fcg_calloc(ctx, sizeof *k);
    if (!k) return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", fn);
    k->ctx = ctx;
    k->kind = kind;
    k->reduce_dtype = -1;
    snprintf(k->name, sizeof k->name, "%s", name);
    k->in_text = fcg_strdup(ctx, in);
    k->out_text = fcg_strdup(ctx, outp);
    if (!k->in_text || !k->out_text) {
        kernel_free(ctx, k);
        return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", fn);
    }
    *out = k;
    return FC_OK;
}

fc_status fc_elementwise_kernel(fc_ctx *ctx, const char *in_params, const char *out_params,
                                const char *operation, const char *name, fc_kernel **out) {
    if (!ctx || !out) return FC_ERR_NULL;
    *out = NULL;
    fcg_user_kernel *k;
    fc_status st = start(ctx, FCG_USER_ELEMENTWISE, "fc_elementwise_kernel", in_params,
                         out_params, name, &k);
    if (st != FC_OK) return st;
    if (!operation) {
        kernel_free(ctx, k);
        return fcg_error(ctx, FC_ERR_NULL, "%s: the operation is NULL", name);
    }
    if (!(k->body = fcg_strdup(ctx, operation))) {
        kernel_free(ctx, k);
        return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    }
    return define(ctx, k, NULL, out);
}

fc_status fc_reduction_kernel(fc_ctx *ctx, const char *in_params, const char *out_params,
                              const char *map_expr, const char *reduce_expr,
                              const char *post_map_expr, const char *identity, const char *name,
                              const char *reduce_type, fc_kernel **out) {
    if (!ctx || !out) return FC_ERR_NULL;
    *out = NULL;
    fcg_user_kernel *k;
    fc_status st = start(ctx, FCG_USER_REDUCTION, "fc_reduction_kernel", in_params, out_params,
                         name, &k);
    if (st != FC_OK) return st;
    if (!map_expr || !reduce_expr || !post_map_expr || !identity) {
        kernel_free(ctx, k);
        return fcg_error(ctx, FC_ERR_NULL, "%s: map_expr, reduce_expr, post_map_expr and "
                         "identity are required", name);
    }
    k->map = fcg_strdup(ctx, map_expr);
    k->reduce = fcg_strdup(ctx, reduce_expr);
    k->post = fcg_strdup(ctx, post_map_expr);
    k->identity = fcg_strdup(ctx, identity);
    if (!k->map || !k->reduce || !k->post || !k->identity) {
        kernel_free(ctx, k);
        return fcg_error(ctx, FC_ERR_NOMEM, "%s: out of memory", name);
    }
    return define(ctx, k, reduce_type, out);
}

const char *fc_kernel_name(const fc_kernel *k) { return k ? k->name : NULL; }

/* ---- calls ------------------------------------------------------------------------------ */

fc_dtype fcg_user_place_dtype(const fc_array *a, const fcg_user_kernel *k, int place) {
    for (int i = 0; i < k->nin && i < a->nin; i++)
        if (k->in[i].dtype < 0 && k->in[i].place == place) return (fc_dtype)a->in[i]->dtype;
    return FC_F64; /* not reached: definitions bind every placeholder they use */
}

fc_dtype fcg_user_param_dtype(const fc_array *a, const fcg_user_kernel *k,
                              const fcg_user_param *p) {
    return p->dtype >= 0 ? (fc_dtype)p->dtype : fcg_user_place_dtype(a, k, p->place);
}

/* Binds the placeholders from the arguments and converts them to their parameters' dtypes
 * into conv (references the caller's private scope owns). Arrays bind first and must agree;
 * a placeholder only scalars are given for takes the first scalar's dtype. Returns the error
 * (message set) on failure. */
static fc_status bind_args(fc_ctx *ctx, const fcg_user_kernel *k, fc_array *const *in,
                           fc_array **conv, fc_dtype *place_dtype) {
    bool bound[FCG_USER_MAX_PLACEHOLDERS] = {false};
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < k->nin; i++) {
            const fcg_user_param *p = &k->in[i];
            if (p->dtype >= 0 || bound[p->place] || (pass == 0 && in[i]->weak)) continue;
            place_dtype[p->place] = (fc_dtype)in[i]->dtype;
            bound[p->place] = true;
        }
    for (int i = 0; i < k->nin; i++) {
        const fcg_user_param *p = &k->in[i];
        fc_dtype want = p->dtype >= 0 ? (fc_dtype)p->dtype : place_dtype[p->place];
        fc_dtype have = (fc_dtype)in[i]->dtype;
        conv[i] = in[i];
        fcg_pyint v;
        char vs[FCG_PYINT_STR];
        if (fcg_pyint_of(in[i], &v) && !fcg_pyint_fits(v, want))
            return fcg_error(ctx, FC_ERR_VALUE, "%s: argument %s: %s does not fit in %s", k->name,
                             p->name, fcg_pyint_str(v, vs), fc_dtype_name(want));
        if (in[i]->weak && !p->raw && have != want) {
            conv[i] = fc_cast(in[i], want);
            if (conv[i]->status != FC_OK) return conv[i]->status;
        } else if (have != want) {
            if (p->dtype < 0)
                return fcg_error(ctx, FC_ERR_DTYPE,
                                 "%s: argument %s is %s, but %s is %s (bound by an earlier "
                                 "argument)", k->name, p->name, fc_dtype_name(have),
                                 k->place[p->place], fc_dtype_name(want));
            return fcg_error(ctx, FC_ERR_DTYPE,
                             "%s: argument %s is %s, the kernel declares %s (fc_cast converts)",
                             k->name, p->name, fc_dtype_name(have), fc_dtype_name(want));
        }
    }
    return FC_OK;
}

/* The checks every call makes: the kernel, the counts, the arguments' contexts and health.
 * Returns the context (NULL for no kernel) and, on failure, *early (a new poisoned array). */
static fc_ctx *call_begin(fc_kernel *k, fcg_user_kind kind, int nin, fc_array *const *in,
                          fc_array **early) {
    *early = NULL;
    if (!k) return NULL;
    fc_ctx *ctx = k->ctx;
    if (k->kind != kind) {
        *early = fcg_poison(ctx, FC_ERR_INVALID, "%s: a%s kernel is called with %s", k->name,
                            k->kind == FCG_USER_REDUCTION ? " reduction" : "n elementwise",
                            k->kind == FCG_USER_REDUCTION ? "fc_kernel_call" : "fc_kernel_reduce");
        return ctx;
    }
    if (nin != k->nin || (nin > 0 && !in)) {
        *early = fcg_poison(ctx, FC_ERR_INVALID, "%s takes %d argument%s (%s), not %d", k->name,
                            k->nin, k->nin == 1 ? "" : "s", k->in_text, nin);
        return ctx;
    }
    fc_ctx *c = fcg_begin(k->name, nin, in, early);
    if (c && c != ctx && !*early)
        *early = fcg_poison(ctx, FC_ERR_CONTEXT, "%s: the arguments belong to another context "
                            "than the kernel", k->name);
    return ctx;
}

/* The broadcast shape of the arguments that are not raw. */
static fc_status call_shape(fc_ctx *ctx, const fcg_user_kernel *k, fc_array *const *args,
                            int *ndim, int64_t *shape) {
    fc_array *shaped[FCG_USER_MAX_PARAMS];
    int n = 0;
    for (int i = 0; i < k->nin; i++)
        if (!k->in[i].raw) shaped[n++] = args[i];
    if (n == 0)
        return fcg_error(ctx, FC_ERR_INVALID, "%s: every argument is raw: at least one must give "
                         "the output's shape", k->name);
    return fcg_broadcast_shapes(ctx, k->name, n, shaped, ndim, shape);
}

/* The elementwise call's nodes, in a private scope the caller closes. */
static fc_status make_calls(fc_ctx *ctx, const fcg_user_kernel *k, fc_array *const *in,
                            fc_array **res) {
    fc_array *conv[FCG_USER_MAX_PARAMS];
    fc_dtype place_dtype[FCG_USER_MAX_PLACEHOLDERS] = {FC_BOOL};
    int ndim = 0;
    int64_t shape[FC_MAX_DIMS];
    fc_status st = bind_args(ctx, k, in, conv, place_dtype);
    if (st == FC_OK) st = call_shape(ctx, k, conv, &ndim, shape);
    for (int j = 0; j < k->nout && st == FC_OK; j++) {
        const fcg_user_param *p = &k->out[j];
        fc_dtype t = p->dtype >= 0 ? (fc_dtype)p->dtype : place_dtype[p->place];
        fcg_params prm;
        memset(&prm, 0, sizeof prm);
        prm.ival = (int64_t)k->hash;
        prm.count = j;
        res[j] = fcg_make(ctx, FCG_OP_USER_EW, t, t, false, ndim, shape, k->nin, conv, &prm);
        st = res[j]->status;
    }
    return st;
}

fc_status fc_kernel_call(fc_kernel *k, int nin, fc_array *const *in, int nout, fc_array **out) {
    if (!out) return FC_ERR_NULL;
    for (int j = 0; j < nout; j++) out[j] = NULL;
    fc_array *early;
    fc_ctx *ctx = call_begin(k, FCG_USER_ELEMENTWISE, nin, in, &early);
    if (!ctx) return FC_ERR_NULL;
    if (!early && nout != k->nout)
        early = fcg_poison(ctx, FC_ERR_INVALID, "%s gives %d output%s (%s), not %d", k->name,
                           k->nout, k->nout == 1 ? "" : "s", k->out_text, nout);
    fc_array *res[FCG_USER_MAX_PARAMS] = {NULL};
    fc_status st = early ? early->status : FC_OK;
    if (!early) {
        fc_scope *scope = fc_scope_open(ctx);
        if (!scope) {
            early = fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", k->name);
            st = FC_ERR_NOMEM;
        } else {
            st = make_calls(ctx, k, in, res);
            if (st != FC_OK) early = fc_keep(fcg_poison_ctx(ctx, st));
            for (int j = 0; j < nout && st == FC_OK; j++) res[j] = fc_keep(res[j]);
            fc_scope_close(scope);
            if (early) early = fcg_ret(ctx, early);
        }
    }
    for (int j = 0; j < nout; j++) {
        if (early) {
            if (j > 0) fcg_retain(early);
            out[j] = j > 0 ? fcg_ret(ctx, early) : early;
        } else {
            out[j] = fcg_ret(ctx, res[j]);
        }
    }
    if (early && nout == 0 && !ctx->scope) fc_release(early); /* taken by nobody, owned by us */
    return st;
}

fc_array *fc_kernel_call1(fc_kernel *k, int nin, fc_array *const *in) {
    if (!k) return NULL;
    if (k->nout != 1)
        return fcg_poison(k->ctx, FC_ERR_INVALID, "%s gives %d outputs (%s): fc_kernel_call "
                          "takes them", k->name, k->nout, k->out_text);
    fc_array *out[1];
    fc_kernel_call(k, nin, in, 1, out);
    return out[0];
}

/* The reduction call's node, in a private scope the caller closes. */
static fc_array *make_reduction(fc_ctx *ctx, const fcg_user_kernel *k, fc_array *const *in,
                                fc_axes axes, bool keepdims) {
    fc_array *conv[FCG_USER_MAX_PARAMS];
    fc_dtype place_dtype[FCG_USER_MAX_PLACEHOLDERS] = {FC_BOOL};
    fc_status st = bind_args(ctx, k, in, conv, place_dtype);
    int ndim = 0;
    int64_t shape[FC_MAX_DIMS];
    if (st == FC_OK) st = call_shape(ctx, k, conv, &ndim, shape);
    if (st != FC_OK) return fcg_poison_ctx(ctx, st);
    /* every input at the reduction's shape, so the reduction schedules see one space */
    fc_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    memcpy(s.dim, shape, (size_t)ndim * 8);
    for (int i = 0; i < k->nin; i++)
        if (conv[i]->ndim != ndim || memcmp(conv[i]->shape, shape, (size_t)ndim * 8) != 0) {
            conv[i] = fc_broadcast_to(conv[i], s);
            if (conv[i]->status != FC_OK) return conv[i];
        }
    uint32_t mask = 0;
    if ((st = fcg_axes_mask(ctx, k->name, ndim, shape, axes, &mask)) != FC_OK)
        return fcg_poison_ctx(ctx, st);
    const fcg_user_param *p = &k->out[0];
    fc_dtype t = p->dtype >= 0 ? (fc_dtype)p->dtype : place_dtype[p->place];
    fc_dtype r = k->reduce_dtype >= 0 ? (fc_dtype)k->reduce_dtype
                                      : place_dtype[-1 - k->reduce_dtype];
    int rnd = 0;
    int64_t rshape[FC_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        if (!(mask & (1u << d))) rshape[rnd++] = shape[d];
        else if (keepdims) rshape[rnd++] = 1;
    }
    fcg_params prm;
    memset(&prm, 0, sizeof prm);
    prm.ival = (int64_t)k->hash;
    prm.axes = mask;
    prm.keepdims = keepdims;
    return fcg_make(ctx, FCG_OP_USER_REDUCE, t, r, false, rnd, rshape, k->nin, conv, &prm);
}

fc_array *fc_kernel_reduce(fc_kernel *k, int nin, fc_array *const *in, fc_axes axes,
                           bool keepdims) {
    fc_array *early;
    fc_ctx *ctx = call_begin(k, FCG_USER_REDUCTION, nin, in, &early);
    if (!ctx || early) return early;
    fc_scope *scope = fc_scope_open(ctx);
    if (!scope) return fcg_poison(ctx, FC_ERR_NOMEM, "%s: out of memory", k->name);
    fc_array *r = fc_keep(make_reduction(ctx, k, in, axes, keepdims));
    fc_scope_close(scope);
    return fcg_ret(ctx, r ? r : &ctx->oom);
}

const char *fcg_node_name(const fc_array *a) {
    if (a->op == FCG_OP_USER_EW || a->op == FCG_OP_USER_REDUCE) {
        const fcg_user_kernel *k = fcg_user_find(a->ctx, (uint64_t)a->p.ival);
        if (k) return k->name;
    }
    return fcg_ops[a->op].pyname;
}
