/*
 * graph/strbuf.c - a growable string for printers and code generators. An allocation
 * failure sticks, so callers append freely and check once at the end.
 */
#include "graph.h"

#include <stdio.h>
#include <string.h>

static bool sb_reserve(fcg_sb *b, size_t extra) {
    if (b->failed) return false;
    if (b->s && b->len + extra < b->cap) return true;
    size_t nc = b->cap ? b->cap : 256;
    while (nc <= b->len + extra) nc *= 2;
    char *g = fcg_realloc(b->ctx, b->s, b->cap, nc);
    if (!g) {
        b->failed = true;
        return false;
    }
    b->s = g;
    b->cap = nc;
    return true;
}

void fcg_sb_printf(fcg_sb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
        b->failed = true;
        return;
    }
    if (!sb_reserve(b, (size_t)k + 1)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)k;
}

void fcg_sb_puts(fcg_sb *b, const char *str) {
    size_t k = strlen(str);
    if (!sb_reserve(b, k + 1)) return;
    memcpy(b->s + b->len, str, k + 1);
    b->len += k;
}

void fcg_sb_free(fcg_sb *b) {
    fcg_free(b->ctx, b->s, b->cap);
    b->s = NULL;
    b->len = b->cap = 0;
}

char *fcg_sb_finish(fcg_sb *b) {
    if (!b->failed && !sb_reserve(b, 1)) b->failed = true;
    if (b->failed) {
        fcg_sb_free(b);
        return NULL;
    }
    b->s[b->len] = '\0';
    char *exact = fcg_realloc(b->ctx, b->s, b->cap, b->len + 1);
    if (!exact) {
        fcg_sb_free(b);
        return NULL;
    }
    b->s = NULL;
    b->len = b->cap = 0;
    return exact;
}
