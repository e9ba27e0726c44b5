/*
 * codegen/nvrtc_compile.c - CUDA C to cubin with NVRTC; error messages that quote the source.
 */
#include "nvrtc_compile.h"

#include <nvrtc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_PROGRAM_NAME "fusec_kernel.cu"
#define MAX_SUPPORTED_ARCHS 128
#define QUOTE_MAX_ERRORS 8     /* distinct source lines quoted from one log */
#define QUOTE_CONTEXT 2        /* lines quoted on either side of each */
#define QUOTE_LINE_CHARS 160   /* a longer source line is cut */
#define LOG_MAX_IN_MESSAGE (16 * 1024)

/* ---- a growable string on the context's allocator --------------------------------------- */

typedef struct strbuf {
    fc_ctx *ctx;
    char *p;
    size_t len, cap;
    bool failed; /* an allocation failed: the text is incomplete, report FC_ERR_NOMEM */
} strbuf;

static bool sb_reserve(strbuf *b, size_t extra) {
    if (b->failed) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = fcg_realloc(b->ctx, b->p, b->cap, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void sb_put(strbuf *b, const char *s, size_t n) {
    if (!sb_reserve(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_printf(strbuf *b, const char *fmt, ...) FCG_PRINTF(2, 3);
static void sb_printf(strbuf *b, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        sb_put(b, small, (size_t)n);
        return;
    }
    if (!sb_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Moves the text into out->message. @return FC_OK, or FC_ERR_NOMEM (nothing kept). */
static fc_status sb_to_message(strbuf *b, fcn_cubin *out) {
    if (b->failed || !b->p) {
        fcg_free(b->ctx, b->p, b->cap);
        return FC_ERR_NOMEM;
    }
    out->message = b->p;
    out->message_alloc = b->cap;
    return FC_OK;
}

/* out->message = the text, or FC_ERR_NOMEM in place of `status`. */
static fc_status set_message(fc_ctx *ctx, fcn_cubin *out, fc_status status, const char *text) {
    strbuf b = {.ctx = ctx};
    sb_put(&b, text, strlen(text));
    return sb_to_message(&b, out) == FC_OK ? status : FC_ERR_NOMEM;
}

/* ---- versions and archs ------------------------------------------------------------------ */

fc_status fcn_version(int *major, int *minor) {
    if (!major || !minor) return FC_ERR_NULL;
    return nvrtcVersion(major, minor) == NVRTC_SUCCESS ? FC_OK : FC_ERR_BACKEND;
}

fc_status fcn_supported_archs(int *archs, int cap, int *n) {
    if (!n || (cap > 0 && !archs)) return FC_ERR_NULL;
    int count = 0;
    int all[MAX_SUPPORTED_ARCHS];
    if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count < 0 ||
        count > MAX_SUPPORTED_ARCHS || nvrtcGetSupportedArchs(all) != NVRTC_SUCCESS)
        return FC_ERR_BACKEND;
    for (int i = 0; i < count && i < cap; i++) archs[i] = all[i];
    *n = count;
    return FC_OK;
}

static void set_msg(char *msg, size_t msg_size, const char *fmt, ...) FCG_PRINTF(3, 4);
static void set_msg(char *msg, size_t msg_size, const char *fmt, ...) {
    if (!msg || !msg_size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_size, fmt, ap);
    va_end(ap);
}

/* "sm_75 sm_80 ... sm_121" into buf. */
static void archs_str(char *buf, size_t size, const int *archs, int n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < size; i++) {
        int w = snprintf(buf + len, size - len, "%ssm_%d", i ? " " : "", archs[i]);
        if (w < 0) break;
        len += (size_t)w;
    }
}

fc_status fcn_check_arch(const char *arch, char *msg, size_t msg_size) {
    if (!arch) {
        set_msg(msg, msg_size, "no arch given");
        return FC_ERR_NULL;
    }
    int archs[MAX_SUPPORTED_ARCHS], n = 0;
    if (fcn_supported_archs(archs, MAX_SUPPORTED_ARCHS, &n) != FC_OK) {
        set_msg(msg, msg_size, "NVRTC would not list the archs it supports");
        return FC_ERR_BACKEND;
    }
    char list[600];
    archs_str(list, sizeof list, archs, n);
    int major = 0, minor = 0;
    (void)fcn_version(&major, &minor);

    /* Parse sm_<digits>[a|f] by hand: strtol would accept signs and spaces. */
    const char *p = arch;
    bool is_virtual = strncmp(p, "compute_", 8) == 0;
    if (strncmp(p, "sm_", 3) == 0 || is_virtual) p += is_virtual ? 8 : 3;
    else p = NULL;
    int number = 0, digits = 0;
    while (p && *p >= '0' && *p <= '9' && digits < 4) number = number * 10 + (*p++ - '0'), digits++;
    char suffix = p && (*p == 'a' || *p == 'f') ? *p++ : '\0';
    if (!p || digits < 2 || arch[is_virtual ? 8 : 3] == '0' || *p != '\0' ||
        strlen(arch) >= FCN_ARCH_MAX) {
        set_msg(msg, msg_size,
                "bad arch \"%s\": expected sm_NN, sm_NNa or sm_NNf (NVRTC %d.%d builds %s)", arch,
                major, minor, list);
        return FC_ERR_INVALID;
    }
    if (is_virtual) {
        set_msg(msg, msg_size,
                "arch \"%s\" is virtual: it gives PTX, not a cubin; name a real one (sm_%d%s)",
                arch, number, suffix == 'a' ? "a" : suffix == 'f' ? "f" : "");
        return FC_ERR_INVALID;
    }
    bool known = false;
    for (int i = 0; i < n; i++) known |= archs[i] == number;
    if (!known) {
        set_msg(msg, msg_size, "arch \"%s\" is not supported by NVRTC %d.%d, which builds %s",
                arch, major, minor, list);
        return FC_ERR_UNSUPPORTED;
    }
    /* The suffixed variants exist only from these generations on; NVRTC says no more than
     * "invalid value with --nv_arch flag" otherwise. */
    if ((suffix == 'a' && number < 90) || (suffix == 'f' && number < 100)) {
        set_msg(msg, msg_size,
                "arch \"%s\" does not exist: %s variants start at %s (plain sm_%d is fine)",
                arch, suffix == 'a' ? "arch-specific (a)" : "family-specific (f)",
                suffix == 'a' ? "sm_90a" : "sm_100f", number);
        return FC_ERR_UNSUPPORTED;
    }
    return FC_OK;
}

/* ---- options ----------------------------------------------------------------------------- */

fc_status fcn_options_make(fcn_options *out, const char *arch, unsigned flags,
                           const char *const *extra, int n_extra, char *msg, size_t msg_size) {
    if (!out) return FC_ERR_NULL;
    memset(out, 0, sizeof *out);
    if (n_extra < 0 || n_extra > FCN_MAX_EXTRA) {
        set_msg(msg, msg_size, "%d extra NVRTC options (at most %d)", n_extra, FCN_MAX_EXTRA);
        return FC_ERR_INVALID;
    }
    if (n_extra > 0 && !extra) {
        set_msg(msg, msg_size, "extra NVRTC options missing");
        return FC_ERR_NULL;
    }
    for (int i = 0; i < n_extra; i++)
        if (!extra[i]) {
            set_msg(msg, msg_size, "extra NVRTC option %d is NULL", i);
            return FC_ERR_NULL;
        }
    fc_status st = fcn_check_arch(arch, msg, msg_size);
    if (st != FC_OK) return st;

    /* Fixed order: the list is hashed into the cache key. */
    int n = 0;
    bool raw = (flags & FCN_RAW) != 0, std_given = false;
    for (int i = 0; i < n_extra; i++)
        std_given |= strncmp(extra[i], "-std", 4) == 0 || strncmp(extra[i], "--std", 5) == 0;
    if (!std_given) out->opt[n++] = "--std=c++17";
    if (!raw) {
        out->opt[n++] = "-default-device";
        out->opt[n++] = "--minimal";
    }
    if (flags & FCN_FAST_MATH) {
        out->opt[n++] = "--use_fast_math";
    } else {
        out->opt[n++] = (flags & (FCN_FMAD | FCN_RAW)) ? "--fmad=true" : "--fmad=false";
        out->opt[n++] = "--ftz=false";
        out->opt[n++] = "--prec-div=true";
        out->opt[n++] = "--prec-sqrt=true";
    }
    if (flags & FCN_LINEINFO) out->opt[n++] = "-lineinfo";
    for (int i = 0; i < n_extra; i++) out->opt[n++] = extra[i];
    snprintf(out->arch_opt, sizeof out->arch_opt, "--gpu-architecture=%s", arch);
    out->opt[n++] = out->arch_opt;
    out->n = n;
    return FC_OK;
}

/* ---- error messages ---------------------------------------------------------------------- */

/* The source lines the log's errors name ("name(LINE): error: ..."; also "catastrophic
 * error"), ascending and distinct, at most cap. Warnings and lines of other files are left
 * out. */
static int error_lines(const char *log, const char *name, long *lines, int cap) {
    size_t name_len = strlen(name);
    int n = 0;
    for (const char *line = log, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) next++;
        if (strncmp(line, name, name_len) != 0 || line[name_len] != '(') continue;
        const char *p = line + name_len + 1;
        long number = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 9) number = number * 10 + (*p++ - '0'), digits++;
        if (!digits || p[0] != ')' || p[1] != ':' || p[2] != ' ') continue;
        const char *kind = p + 3, *colon = strchr(kind, ':'), *eol = strchr(kind, '\n');
        if (!colon || (eol && eol < colon)) continue;
        bool is_error = false;
        for (const char *k = kind; k + 5 <= colon; k++) is_error |= strncmp(k, "error", 5) == 0;
        if (!is_error) continue;
        int at = 0;
        while (at < n && lines[at] < number) at++;
        if (at < n && lines[at] == number) continue;
        if (n == cap) {
            if (at == n) continue; /* keep the first `cap` lines of the file */
            n--;
        }
        memmove(lines + at + 1, lines + at, (size_t)(n - at) * sizeof *lines);
        lines[at] = number;
        n++;
    }
    return n;
}

/* Appends the numbered lines around each of lines[0..n) (ascending), marking those with '>',
 * merging windows that touch and separating the others with "...". */
static void quote_source(strbuf *b, const char *source, const long *lines, int n) {
    const char *cursor = source; /* the start of line `cursor_line` */
    long cursor_line = 1, last_printed = 0;
    for (int i = 0; i < n; i++) {
        long first = lines[i] - QUOTE_CONTEXT, last = lines[i] + QUOTE_CONTEXT;
        if (first < 1) first = 1;
        if (first <= last_printed) first = last_printed + 1;
        if (first > last) continue;
        if (last_printed && first > last_printed + 1) sb_printf(b, "      ...\n");
        while (cursor && cursor_line < first) {
            cursor = strchr(cursor, '\n');
            if (cursor) cursor++, cursor_line++;
        }
        for (long l = first; l <= last && cursor && *cursor; l++) {
            const char *eol = strchr(cursor, '\n');
            size_t len = eol ? (size_t)(eol - cursor) : strlen(cursor);
            bool marked = false;
            for (int j = 0; j < n; j++) marked |= lines[j] == l;
            size_t shown = len > QUOTE_LINE_CHARS ? QUOTE_LINE_CHARS : len;
            sb_printf(b, "%c %5ld | %.*s%s\n", marked ? '>' : ' ', l, (int)shown, cursor,
                      shown < len ? " ..." : "");
            last_printed = l;
            cursor = eol ? eol + 1 : NULL;
            cursor_line++;
        }
    }
}

/* out->message for an NVRTC failure: a header, the log and the quoted source lines. */
static fc_status compile_message(fc_ctx *ctx, fcn_cubin *out, fc_status status,
                                 nvrtcResult result, const char *source, const char *name,
                                 const fcn_options *opts) {
    int major = 0, minor = 0;
    (void)fcn_version(&major, &minor);
    strbuf b = {.ctx = ctx};
    sb_printf(&b, "NVRTC %d.%d could not compile \"%s\" for %s (%s)", major, minor, name,
              out->arch, nvrtcGetErrorString(result));
    if (result == NVRTC_ERROR_INVALID_OPTION) {
        sb_printf(&b, "; options:");
        for (int i = 0; i < opts->n; i++) sb_printf(&b, " %s", opts->opt[i]);
    }
    sb_printf(&b, "\n");
    const char *log = out->log ? out->log : "";
    size_t log_len = strlen(log);
    while (log_len && (log[log_len - 1] == '\n' || log[log_len - 1] == ' ')) log_len--;
    if (log_len > LOG_MAX_IN_MESSAGE) {
        sb_put(&b, log, LOG_MAX_IN_MESSAGE);
        sb_printf(&b, "\n[... %zu more bytes of log]", log_len - LOG_MAX_IN_MESSAGE);
    } else {
        sb_put(&b, log, log_len);
    }
    if (log_len) sb_printf(&b, "\n");
    long lines[QUOTE_MAX_ERRORS];
    int n = error_lines(log, name, lines, QUOTE_MAX_ERRORS);
    if (n > 0) {
        sb_printf(&b, "%s, the lines named above:\n", name);
        quote_source(&b, source, lines, n);
    }
    return sb_to_message(&b, out) == FC_OK ? status : FC_ERR_NOMEM;
}

static fc_status status_of(nvrtcResult r) {
    switch (r) {
    case NVRTC_SUCCESS: return FC_OK;
    case NVRTC_ERROR_OUT_OF_MEMORY: return FC_ERR_NOMEM;
    case NVRTC_ERROR_COMPILATION: return FCN_ERR_COMPILE;
    case NVRTC_ERROR_INVALID_OPTION: return FC_ERR_INVALID;
    default: return FC_ERR_BACKEND;
    }
}

/* ---- compiling ---------------------------------------------------------------------------- */

void fcn_cubin_free(fc_ctx *ctx, fcn_cubin *c) {
    if (!ctx || !c) return;
    fcg_free(ctx, c->data, c->size);
    fcg_free(ctx, c->log, c->log_alloc);
    fcg_free(ctx, c->message, c->message_alloc);
    memset(c, 0, sizeof *c);
}

void fcn_cubins_free(fc_ctx *ctx, fcn_cubin *c, int n) {
    for (int i = 0; c && i < n; i++) fcn_cubin_free(ctx, &c[i]);
}

/* Copies NVRTC's log into out->log. */
static fc_status fetch_log(fc_ctx *ctx, nvrtcProgram prog, fcn_cubin *out) {
    size_t size = 0;
    if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS) size = 0;
    out->log = fcg_malloc(ctx, size + 1);
    if (!out->log) return FC_ERR_NOMEM;
    out->log_alloc = size + 1;
    out->log[0] = '\0';
    if (size && nvrtcGetProgramLog(prog, out->log) != NVRTC_SUCCESS) out->log[0] = '\0';
    out->log[size] = '\0';
    return FC_OK;
}

/* The lowered names of names[0..n) after a compile, into lowered (fcg_malloc'd). */
static fc_status fetch_lowered(fc_ctx *ctx, nvrtcProgram prog, const char *const *names, int n,
                               char **lowered, fcn_cubin *out) {
    for (int i = 0; i < n; i++) {
        const char *ln = NULL;
        nvrtcResult r = nvrtcGetLoweredName(prog, names[i], &ln);
        if (r != NVRTC_SUCCESS || !ln) {
            char text[512];
            snprintf(text, sizeof text, "NVRTC has no lowered name for the name expression '%s': "
                     "%s", names[i], nvrtcGetErrorString(r));
            return set_message(ctx, out, FC_ERR_INVALID, text);
        }
        size_t len = strlen(ln) + 1;
        if (!(lowered[i] = fcg_malloc(ctx, len))) return FC_ERR_NOMEM;
        memcpy(lowered[i], ln, len);
    }
    return FC_OK;
}

void fcn_names_free(fc_ctx *ctx, char **lowered, int nnames) {
    for (int i = 0; lowered && i < nnames; i++) {
        if (lowered[i]) fcg_free(ctx, lowered[i], strlen(lowered[i]) + 1);
        lowered[i] = NULL;
    }
}

/* Compiles for an arch already checked into opts; names / lowered as fcn_compile_named. */
static fc_status compile_one(fc_ctx *ctx, const char *source, const char *name,
                             const fcn_options *opts, const char *const *names, int nnames,
                             char **lowered, fcn_cubin *out) {
    double t0 = fcg_now_s() * 1e3;
    nvrtcProgram prog = NULL;
    nvrtcResult r = nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        char text[256];
        snprintf(text, sizeof text, "NVRTC could not create program \"%s\": %s", name,
                 nvrtcGetErrorString(r));
        return set_message(ctx, out, r == NVRTC_ERROR_OUT_OF_MEMORY ? FC_ERR_NOMEM : FC_ERR_BACKEND,
                           text);
    }
    for (int i = 0; i < nnames && r == NVRTC_SUCCESS; i++) r = nvrtcAddNameExpression(prog, names[i]);
    if (r == NVRTC_SUCCESS) r = nvrtcCompileProgram(prog, opts->n, opts->opt);
    fc_status st = fetch_log(ctx, prog, out);
    if (st == FC_OK && r != NVRTC_SUCCESS)
        st = compile_message(ctx, out, status_of(r), r, source, name, opts);
    if (st == FC_OK && nnames) st = fetch_lowered(ctx, prog, names, nnames, lowered, out);
    size_t size = 0;
    if (st == FC_OK && (nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || size == 0))
        st = set_message(ctx, out, FC_ERR_BACKEND, "NVRTC produced no cubin");
    if (st == FC_OK) {
        out->data = fcg_malloc(ctx, size);
        if (!out->data) {
            st = FC_ERR_NOMEM;
        } else {
            out->size = size;
            if (nvrtcGetCUBIN(prog, (char *)out->data) != NVRTC_SUCCESS)
                st = set_message(ctx, out, FC_ERR_BACKEND, "NVRTC would not hand over the cubin");
        }
    }
    nvrtcDestroyProgram(&prog);
    out->compile_ms = fcg_now_s() * 1e3 - t0;
    if (st != FC_OK) {
        fcg_free(ctx, out->data, out->size);
        out->data = NULL;
        out->size = 0;
        fcn_names_free(ctx, lowered, nnames);
    }
    return st;
}

fc_status fcn_compile_named(fc_ctx *ctx, const char *source, const char *name, const char *arch,
                            unsigned flags, const char *const *extra, int n_extra,
                            const char *const *names, int nnames, char **lowered,
                            fcn_cubin *out) {
    if (!out) return FC_ERR_NULL;
    memset(out, 0, sizeof *out);
    if (!ctx) return FC_ERR_NULL;
    if (!source) return set_message(ctx, out, FC_ERR_NULL, "no CUDA source to compile");
    if (nnames < 0 || (nnames && (!names || !lowered)))
        return set_message(ctx, out, FC_ERR_NULL, "name expressions missing");
    for (int i = 0; i < nnames; i++) {
        if (!names[i]) return set_message(ctx, out, FC_ERR_NULL, "a name expression is NULL");
        lowered[i] = NULL;
    }
    fcn_options opts;
    char why[1024];
    fc_status st = fcn_options_make(&opts, arch, flags, extra, n_extra, why, sizeof why);
    if (st != FC_OK) return set_message(ctx, out, st, why);
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    return compile_one(ctx, source, name ? name : DEFAULT_PROGRAM_NAME, &opts, names, nnames,
                       lowered, out);
}

fc_status fcn_compile(fc_ctx *ctx, const char *source, const char *name, const char *arch,
                      unsigned flags, const char *const *extra, int n_extra, fcn_cubin *out) {
    if (!out) return FC_ERR_NULL;
    memset(out, 0, sizeof *out);
    if (!ctx) return FC_ERR_NULL;
    if (!source) return set_message(ctx, out, FC_ERR_NULL, "no CUDA source to compile");
    fcn_options opts;
    char why[1024];
    fc_status st = fcn_options_make(&opts, arch, flags, extra, n_extra, why, sizeof why);
    if (st != FC_OK) return set_message(ctx, out, st, why);
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    return compile_one(ctx, source, name ? name : DEFAULT_PROGRAM_NAME, &opts, NULL, 0, NULL, out);
}

fc_status fcn_compile_archs(fc_ctx *ctx, const char *source, const char *name,
                            const char *const *archs, int n_archs, unsigned flags,
                            const char *const *extra, int n_extra, fcn_cubin *out) {
    if (!out) return FC_ERR_NULL;
    if (n_archs > 0) memset(out, 0, (size_t)n_archs * sizeof *out);
    if (!ctx) return FC_ERR_NULL;
    if (n_archs < 1) return FC_ERR_INVALID;
    if (!archs) return set_message(ctx, &out[0], FC_ERR_NULL, "no arch list");
    /* Check every arch first: a typo in the last one should not cost the others' compiles. */
    for (int i = 0; i < n_archs; i++) {
        fcn_options opts;
        char why[1024];
        fc_status st = fcn_options_make(&opts, archs[i], flags, extra, n_extra, why, sizeof why);
        if (st != FC_OK) return set_message(ctx, &out[i], st, why);
    }
    for (int i = 0; i < n_archs; i++) {
        fc_status st = fcn_compile(ctx, source, name, archs[i], flags, extra, n_extra, &out[i]);
        if (st != FC_OK) return st;
    }
    return FC_OK;
}
