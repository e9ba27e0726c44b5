/*
 * passes/summary.c - one line saying what a kernel computes, for `fusec cache list`:
 *
 *     elementwise: tanh(sin(x0)+x0*c)
 *     row over axis 1: exp(x0-max(x0))/sum(exp(x0-max(x0)))
 *
 * Each output is written as an expression over the kernel's loads (x0, x1, ... in the order
 * of k->leaves), with Python's operators and precedence and NumPy's function names. The line
 * is a function of the kernel's structure alone, as its source and cache key are: constants
 * are "c" and extents are left out, because both are kernel arguments, and one cached kernel
 * serves every program that differs only in them. Broadcasts are implicit, as in NumPy.
 */
#include "plan.h"

#include <stdio.h>
#include <string.h>

typedef struct writer {
    char *buf;
    size_t size, len;
    bool full; /* something did not fit: the line ends in "..." */
} writer;

static void put(writer *w, const char *s) {
    if (w->full) return;
    size_t n = strlen(s);
    if (w->len + n >= w->size) {
        w->full = true;
        return;
    }
    memcpy(w->buf + w->len, s, n + 1);
    w->len += n;
}

/* Python's binding strength of an infix op (higher binds tighter); ATOM for everything else. */
enum { PREC_CMP = 0, PREC_OR, PREC_XOR, PREC_AND, PREC_SHIFT, PREC_ADD, PREC_MUL, PREC_UNARY,
       PREC_POW, PREC_ATOM };

static int prec_of(const fc_array *a) {
    const fcg_op_info *op = &fcg_ops[a->op];
    const char *s = op->infix;
    if (!*s || (op->kind != FCG_KIND_EW && op->kind != FCG_KIND_LIB)) return PREC_ATOM;
    if (a->nin == 1) return PREC_UNARY;
    if (!strcmp(s, "**")) return PREC_POW;
    if (!strcmp(s, "*") || !strcmp(s, "/") || !strcmp(s, "//") || !strcmp(s, "%") ||
        !strcmp(s, "@"))
        return PREC_MUL;
    if (!strcmp(s, "+") || !strcmp(s, "-")) return PREC_ADD;
    if (!strcmp(s, "<<") || !strcmp(s, ">>")) return PREC_SHIFT;
    if (!strcmp(s, "&")) return PREC_AND;
    if (!strcmp(s, "^")) return PREC_XOR;
    if (!strcmp(s, "|")) return PREC_OR;
    return PREC_CMP;
}

static int leaf_index(const fcp_kernel *k, const fc_array *a) {
    for (int i = 0; i < k->nleaf; i++)
        if (k->leaves[i] == a) return i;
    return -1;
}

/* Writes a with parentheses when it binds more loosely than `need`. Every call writes at
 * least one character or finds the line full, so a shared subexpression written out at each
 * use costs at most the line's length, whatever the DAG. */
static void expr(writer *w, const fcp_kernel *k, const fc_array *a, int need) {
    if (w->full) return;
    char tmp[32];
    int leaf = leaf_index(k, a);
    if (leaf >= 0) {
        snprintf(tmp, sizeof tmp, "x%d", leaf);
        put(w, tmp);
        return;
    }
    const fcg_op_info *op = &fcg_ops[a->op];
    switch (a->op) {
    case FCG_OP_CONST: put(w, "c"); return;
    case FCG_OP_DATA:
    case FCG_OP_INPUT: put(w, "x"); return;
    case FCG_OP_POISON: put(w, "poison"); return;
    case FCG_OP_BROADCAST: expr(w, k, a->in[0], need); return;
    case FCG_OP_SCATTER_ADD:
    case FCG_OP_SCATTER_MAX:
    case FCG_OP_SCATTER_MIN:
        if (k->kind != FCP_KERNEL_SCATTER) { /* the copy kernel: in[0] */
            expr(w, k, a->in[0], need);
            return;
        }
        break;
    default: break;
    }
    int prec = prec_of(a);
    if (prec != PREC_ATOM) {
        bool paren = prec < need;
        if (paren) put(w, "(");
        if (a->nin == 1) {
            put(w, op->infix);
            expr(w, k, a->in[0], PREC_UNARY);
        } else {
            /* Left-associative ops need their right operand tighter; ** is right-associative;
             * comparisons never chain (a<b<c means something else in Python). */
            bool pow = prec == PREC_POW, cmp = prec == PREC_CMP;
            expr(w, k, a->in[0], pow || cmp ? prec + 1 : prec);
            put(w, op->infix);
            expr(w, k, a->in[1], pow ? prec : prec + 1);
        }
        if (paren) put(w, ")");
        return;
    }
    put(w, fcg_node_name(a));
    put(w, "(");
    for (int i = fcg_ops[a->op].kind == FCG_KIND_SCATTER; i < a->nin; i++) {
        if (i > (fcg_ops[a->op].kind == FCG_KIND_SCATTER)) put(w, ",");
        expr(w, k, a->in[i], PREC_CMP);
    }
    if (a->op == FCG_OP_CAST) {
        put(w, ",");
        put(w, fc_dtype_name((fc_dtype)a->dtype));
    }
    put(w, ")");
}

void fcp_kernel_summary(const fcp_kernel *k, char *buf, size_t size) {
    if (!buf || size == 0) return;
    buf[0] = '\0';
    if (!k || size < 4) return;
    writer w = {buf, size - 3, 0, false}; /* room kept for "..." */
    put(&w, fcp_kernel_kind_names[k->kind]);
    if (k->rmask && (k->kind == FCP_KERNEL_REDUCE || k->kind == FCP_KERNEL_ROW)) {
        bool several = (k->rmask & (k->rmask - 1)) != 0;
        put(&w, several ? " over axes " : " over axis ");
        const char *sep = "";
        for (int d = 0; d < k->ndim && d < 32; d++)
            if (k->rmask & (1u << d)) {
                char tmp[16];
                snprintf(tmp, sizeof tmp, "%s%d", sep, d);
                put(&w, tmp);
                sep = ",";
            }
    }
    put(&w, ":");
    for (int i = 0; i < k->nout; i++) {
        put(&w, i ? "; " : " ");
        expr(&w, k, k->outs[i], PREC_CMP);
    }
    if (w.full) memcpy(buf + w.len, "...", 4);
}
