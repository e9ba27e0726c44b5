/*
 * codegen/prelude_parts.c - which optional parts of the device prelude a kernel needs.
 *
 * The prelude marks its optional parts itself ("#if FCX_PART_<NAME>" up to the "#endif"
 * that names the part in its comment), so this file holds no list of them that could drift
 * from it. On
 * first use it reads the embedded prelude once: an identifier (fcx_... or FCX_..., outside
 * comments) that occurs in a part and nowhere in the rest of the prelude belongs to that part.
 * A kernel needs a part when its text names one of the part's identifiers, or, for COMPLEX,
 * a complex compute type: complex ops are overloads of names the rest of the prelude also
 * defines (fcx_abs, fcx_exp), chosen by the argument's type. Parts that name another part's
 * identifiers pull that part in too. A part wrongly left out cannot change what a kernel
 * computes: the call then has no overload at all and NVRTC fails (tests/test_codegen.c
 * compiles every kernel it generates against exactly the parts it was given).
 */
#include "prelude.h"

#include "codegen.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARTS 16
/* for_each_name's length carries this bit for a name pasted onto (fcx_rand_##draw) */
#define NAME_PREFIX ((size_t)1 << (sizeof(size_t) * 8 - 1))
#define PART_NAME_MAX 32

typedef struct token {
    const char *s;
    size_t len;
    unsigned mask; /* the parts it belongs to */
    bool prefix;   /* pasted onto (fcx_scatter_##D): names that start with it */
} token;

typedef struct tokens {
    token *t;
    size_t n, cap;
    bool failed;
} tokens;

static struct {
    bool ok; /* false: the prelude could not be read; every kernel gets every part */
    int nparts;
    char names[MAX_PARTS][PART_NAME_MAX];
    unsigned closure[MAX_PARTS]; /* part i and every part it needs, transitively */
    int complex_part;            /* the part complex compute types need, or -1 */
    tokens owned;                /* sorted by text */
    size_t *prefix, nprefix;     /* the entries of owned that are prefixes */
} parts;

static pthread_once_t parts_once = PTHREAD_ONCE_INIT;

static bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

/* Calls fn on every identifier of text[0, len) that starts with fcx_ or FCX_, skipping
 * comments and string and character literals. */
static void for_each_name(const char *text, size_t len, void (*fn)(const char *, size_t, void *),
                          void *user) {
    const char *p = text, *end = text + len;
    while (p < end) {
        if (p + 1 < end && p[0] == '/' && p[1] == '/') {
            while (p < end && *p != '\n') p++;
        } else if (p + 1 < end && p[0] == '/' && p[1] == '*') {
            p += 2;
            while (p + 1 < end && !(p[0] == '*' && p[1] == '/')) p++;
            p += 2;
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (p < end && *p != q && *p != '\n') p += *p == '\\' ? 2 : 1;
            p++;
        } else if (is_ident_start(*p)) {
            const char *s = p;
            while (p < end && is_ident_char(*p)) p++;
            size_t n = (size_t)(p - s);
            /* a bare fcx_##x says nothing of the names it makes: not a prefix, not a name */
            bool pasted = p + 1 < end && p[0] == '#' && p[1] == '#';
            if (n > 4 && (strncmp(s, "fcx_", 4) == 0 || strncmp(s, "FCX_", 4) == 0))
                fn(s, pasted ? n | NAME_PREFIX : n, user);
        } else if (*p >= '0' && *p <= '9') {
            while (p < end && is_ident_char(*p)) p++; /* 0x1fu is one number, not "fu" */
        } else {
            p++;
        }
    }
}

static void tokens_add(const char *s, size_t n, void *user) {
    tokens *ts = user;
    if (ts->failed) return;
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? 2 * ts->cap : 512;
        token *t = realloc(ts->t, cap * sizeof *t);
        if (!t) {
            ts->failed = true;
            return;
        }
        ts->t = t;
        ts->cap = cap;
    }
    ts->t[ts->n++] = (token){s, n & ~NAME_PREFIX, 0, (n & NAME_PREFIX) != 0};
}

static int token_cmp(const void *a, const void *b) {
    const token *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    c = (x->len > y->len) - (x->len < y->len);
    return c ? c : (int)x->prefix - (int)y->prefix;
}

/* Sorts and merges equal names (their masks or'ed). */
static void tokens_unique(tokens *ts) {
    if (!ts->n) return;
    qsort(ts->t, ts->n, sizeof *ts->t, token_cmp);
    size_t w = 0;
    for (size_t r = 1; r < ts->n; r++) {
        if (token_cmp(&ts->t[w], &ts->t[r]) == 0) ts->t[w].mask |= ts->t[r].mask;
        else ts->t[++w] = ts->t[r];
    }
    ts->n = w + 1;
}

static const token *tokens_find(const tokens *ts, const char *s, size_t n) {
    token key = {s, n, 0, false};
    return ts->n ? bsearch(&key, ts->t, ts->n, sizeof *ts->t, token_cmp) : NULL;
}

/* The parts a name belongs to: as it is, or through a prefix pasted onto in a part (few:
 * searched in turn). */
static unsigned owner_mask(const char *s, size_t n) {
    const token *t = tokens_find(&parts.owned, s, n);
    unsigned m = t ? t->mask : 0u;
    for (size_t i = 0; i < parts.nprefix; i++) {
        const token *p = &parts.owned.t[parts.prefix[i]];
        if (p->len <= n && memcmp(p->s, s, p->len) == 0) m |= p->mask;
    }
    return m;
}

/* fcx_ct_c64, fcx_load_c128, fcx_cast_c64...: a complex value, so the complex overloads.
 * The storage types alone (fcx_t_c64, fcx_t_c128) are not: kernels use fcx_t_c128 as a
 * 16-byte aligned word for shared memory. */
static bool names_complex(const char *s, size_t n) {
    bool c64 = n > 4 && memcmp(s + n - 4, "_c64", 4) == 0;
    bool c128 = n > 5 && memcmp(s + n - 5, "_c128", 5) == 0;
    if (!c64 && !c128) return false;
    return !(n == 9 && memcmp(s, "fcx_t_c64", 9) == 0) &&
           !(n == 10 && memcmp(s, "fcx_t_c128", 10) == 0);
}

typedef struct need_scan {
    unsigned mask;
    bool between_parts; /* scanning a part for the parts it needs */
} need_scan;

static void need_name(const char *s, size_t n, void *user) {
    need_scan *ns = user;
    n &= ~NAME_PREFIX;
    if (parts.complex_part >= 0 && !ns->between_parts && names_complex(s, n))
        ns->mask |= 1u << parts.complex_part;
    unsigned m = owner_mask(s, n);
    /* A part that names a name of several parts (an op's overloads, which the rest of the
     * prelude defines by pasting) does not need them: only a name of one part is its. */
    if (!ns->between_parts || (m & (m - 1)) == 0) ns->mask |= m;
}

/* The parts text[0, len) names directly. */
static unsigned direct_needs(const char *text, size_t len, bool between_parts) {
    need_scan ns = {0, between_parts};
    for_each_name(text, len, need_name, &ns);
    return ns.mask;
}

typedef struct part_range {
    const char *begin, *end; /* the part's text, without its #if and #endif lines */
} part_range;

/* Finds the parts' markers; false when they are unbalanced or too many. */
static bool find_parts(const char *src, part_range *r) {
    static const char open[] = "\n#if FCX_PART_";
    for (const char *p = strstr(src, open); p; p = strstr(p, open)) {
        if (parts.nparts == MAX_PARTS) return false;
        const char *name = p + sizeof open - 1, *eol = strchr(name, '\n');
        size_t nl = eol ? (size_t)(eol - name) : 0;
        if (!nl || nl >= PART_NAME_MAX) return false;
        char close[PART_NAME_MAX + 32];
        memcpy(parts.names[parts.nparts], name, nl);
        parts.names[parts.nparts][nl] = '\0';
        snprintf(close, sizeof close, "\n#endif /* FCX_PART_%s */", parts.names[parts.nparts]);
        const char *e = strstr(eol, close);
        if (!e) return false;
        r[parts.nparts].begin = eol + 1;
        r[parts.nparts].end = e + 1;
        if (strcmp(parts.names[parts.nparts], "COMPLEX") == 0) parts.complex_part = parts.nparts;
        parts.nparts++;
        p = e + strlen(close);
    }
    return true;
}

/* Whether the rest of the prelude defines a name: has it, or pastes onto a prefix of it
 * (fcx_ct_##D makes fcx_ct_f32, which the parts use). Its bare fcx_##op pastes are no
 * prefix (for_each_name leaves them out): op names the parts overload stay theirs. */
static bool in_core(const tokens *core, const char *s, size_t n) {
    if (tokens_find(core, s, n)) return true;
    for (size_t i = 0; i < core->n; i++)
        if (core->t[i].prefix && core->t[i].len <= n && memcmp(core->t[i].s, s, core->t[i].len) == 0)
            return true;
    return false;
}

static void parts_init(void) {
    parts.complex_part = -1;
    const char *src = fcx_prelude_source;
    part_range r[MAX_PARTS];
    if (!find_parts(src, r)) return;
    /* The names of the rest of the prelude (the text between the parts). */
    tokens core = {0};
    const char *at = src;
    for (int i = 0; i <= parts.nparts; i++) {
        const char *stop = i < parts.nparts ? r[i].begin : src + fcx_prelude_size;
        for_each_name(at, (size_t)(stop - at), tokens_add, &core);
        if (i < parts.nparts) at = r[i].end;
    }
    /* Every op's fcx_<name>: the rest of the prelude defines them all (some by pasting,
     * fcx_##name, which the scan cannot see), and parts only add overloads or call them. */
    static char op_names[FCG_OP_COUNT][48];
    for (int op = 0; op < FCG_OP_COUNT; op++) {
        int n = snprintf(op_names[op], sizeof op_names[op], "fcx_%s", fcg_ops[op].cname);
        if (n > 0 && (size_t)n < sizeof op_names[op]) tokens_add(op_names[op], (size_t)n, &core);
    }
    tokens_unique(&core);
    tokens owned = {0};
    for (int i = 0; i < parts.nparts && !core.failed; i++) {
        if (i == parts.complex_part) continue; /* its names are overloads: the type says */
        size_t from = owned.n;
        for_each_name(r[i].begin, (size_t)(r[i].end - r[i].begin), tokens_add, &owned);
        size_t w = from;
        for (size_t k = from; k < owned.n; k++)
            if (!in_core(&core, owned.t[k].s, owned.t[k].len)) {
                owned.t[w] = owned.t[k];
                owned.t[w++].mask = 1u << i;
            }
        owned.n = w;
    }
    free(core.t);
    if (core.failed || owned.failed) {
        free(owned.t);
        return;
    }
    tokens_unique(&owned);
    parts.owned = owned;
    size_t np = 0;
    for (size_t k = 0; k < owned.n; k++) np += owned.t[k].prefix;
    if (np && !(parts.prefix = malloc(np * sizeof *parts.prefix))) return;
    for (size_t k = 0; k < owned.n; k++)
        if (owned.t[k].prefix) parts.prefix[parts.nprefix++] = k;
    for (int i = 0; i < parts.nparts; i++)
        parts.closure[i] = 1u << i | direct_needs(r[i].begin, (size_t)(r[i].end - r[i].begin), true);
    for (bool grew = true; grew;) {
        grew = false;
        for (int i = 0; i < parts.nparts; i++) {
            unsigned m = parts.closure[i];
            for (int j = 0; j < parts.nparts; j++)
                if (m & (1u << j)) m |= parts.closure[j];
            grew |= m != parts.closure[i];
            parts.closure[i] = m;
        }
    }
    parts.ok = true;
}

int fcx_prelude_parts_count(void) {
    pthread_once(&parts_once, parts_init);
    return parts.nparts;
}

const char *fcx_prelude_part_name(int i) {
    pthread_once(&parts_once, parts_init);
    return i >= 0 && i < parts.nparts ? parts.names[i] : NULL;
}

unsigned fcx_prelude_parts_needed(const char *text, size_t len) {
    pthread_once(&parts_once, parts_init);
    unsigned all = parts.nparts ? (unsigned)((1ull << parts.nparts) - 1) : 0u;
    if (!parts.ok) return all;
    unsigned direct = direct_needs(text, len, false), m = 0;
    for (int i = 0; i < parts.nparts; i++)
        if (direct & (1u << i)) m |= parts.closure[i];
    return m;
}

size_t fcx_prelude_parts_defines(unsigned needed, char *buf, size_t size) {
    size_t len = 0;
    for (int i = 0; i < fcx_prelude_parts_count(); i++) {
        if (needed & (1u << i)) continue;
        int n = snprintf(buf ? buf + len : NULL, buf && len < size ? size - len : 0,
                         "#define FCX_PART_%s 0\n", parts.names[i]);
        if (n > 0) len += (size_t)n;
    }
    return len;
}
